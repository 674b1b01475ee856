from __future__ import annotations

import json

from tether.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UnknownBlock,
    Usage,
)


def test_round_trip_keeps_every_block_kind() -> None:
    original = [
        Message.user("look at this", ImageBlock.from_bytes(b"\x89PNG", "image/png")),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(text="hmm", signature="sig=="),
                TextBlock(text="Reading."),
                ToolCallBlock(id="c1", name="read", arguments={"path": "a.txt", "n": [1, 2]}),
            ],
        ),
        Message.tool(
            [
                ToolResultBlock(
                    call_id="c1", content=[TextBlock(text="hi"), ImageBlock(url="https://x/y.png")]
                )
            ]
        ),
    ]
    for message in original:
        assert Message.from_json(message.to_json()) == message


def test_unknown_fields_and_unknown_blocks_survive_a_round_trip() -> None:
    line = json.dumps(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "text": "", "redacted": True, "data": "opaque-blob"},
                {"type": "citation", "source": "doc-7", "span": [3, 9]},
                {"type": "text", "text": "ok", "provider_annotation": {"a": 1}},
            ],
            "meta": {"model": "x/y", "trace_id": "t-1"},
            "future_field": 42,
        }
    )
    message = Message.from_json(line)
    assert isinstance(message.content[1], UnknownBlock)
    again = json.loads(message.to_json())
    assert again["future_field"] == 42
    assert again["meta"]["trace_id"] == "t-1"
    assert again["content"][0]["data"] == "opaque-blob"
    assert again["content"][1] == {"type": "citation", "source": "doc-7", "span": [3, 9]}
    assert again["content"][2]["provider_annotation"] == {"a": 1}


def test_views_and_usage_sum() -> None:
    message = Message(
        role="assistant",
        content=[TextBlock(text="a"), ToolCallBlock(id="1", name="t"), TextBlock(text="b")],
    )
    assert message.text == "ab"
    assert [c.id for c in message.tool_calls] == ["1"]
    total = Usage(input_tokens=3, output_tokens=1, cache_read_tokens=2) + Usage(
        input_tokens=1, output_tokens=4
    )
    assert (
        total.input_tokens,
        total.output_tokens,
        total.cache_read_tokens,
        total.total_tokens,
    ) == (4, 5, 2, 9)


def test_tool_result_text_joins_text_parts_only() -> None:
    result = ToolResultBlock(
        call_id="c", content=[TextBlock(text="a"), ImageBlock(data="AA=="), TextBlock(text="b")]
    )
    assert result.text == "ab"
    assert ToolResultBlock(call_id="c", content="plain").text == "plain"
