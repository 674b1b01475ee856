"""Replaying histories to Gemini: this model's own turns verbatim, other models' turns
(Anthropic thinking, OpenAI call ids, images in tool results) made valid for Gemini."""

from __future__ import annotations

import base64

import pytest

from tether.messages import (
    ImageBlock,
    Message,
    MessageMeta,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tether.provider import ModelRequest, ModelResponse
from tether_google import GoogleProvider
from tether_google.request import SKIP_SIGNATURE

PNG = ImageBlock.from_bytes(b"\x89PNG\r\n\x1a\n-screenshot-", "image/png")


@pytest.fixture
async def provider(provider_config):  # type: ignore[no-untyped-def]
    google = GoogleProvider(provider_config)
    yield google
    await google.aclose()


async def send(
    provider: GoogleProvider, server, wire, messages: list[Message], model: str = "gemini-2.5-flash"
):  # type: ignore[no-untyped-def]
    server.queue(wire.reply("ok"))
    request = ModelRequest(
        model=model, messages=messages, capabilities=provider.capabilities(model)
    )
    events = [e async for e in provider.stream(request)]
    assert isinstance(events[-1], ModelResponse)
    return wire.contents_of(server.requests[-1])


def foreign_history() -> list[Message]:
    """A turn produced by Claude: signed thinking, a redacted block, a tool call with an
    Anthropic id, and a tool result holding an image."""
    return [
        Message.user("Open the dashboard and tell me what is wrong."),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(
                    text="I should take a screenshot first.",
                    signature="EqQBCkYIBxgCKkD+anthropic/sig==",
                ),
                ThinkingBlock(redacted=True, data="EmwKAhgBEgy3opaque"),
                TextBlock(text="Taking a screenshot."),
                ToolCallBlock(
                    id="toolu_01A09q90qw90lq917835lq9",
                    name="screenshot",
                    arguments={"url": "/dash"},
                ),
            ],
            meta=MessageMeta(model="anthropic/claude-sonnet-4-5"),
        ),
        Message.tool(
            [
                ToolResultBlock(
                    call_id="toolu_01A09q90qw90lq917835lq9",
                    content=[TextBlock(text="Captured."), PNG],
                )
            ]
        ),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(text="Need the logs too.", signature="rs_68af2c1e"),
                ToolCallBlock(id="call_Zx81", name="read_logs", arguments={"lines": 20}),
                ToolCallBlock(
                    id="call_Zx82", name="read_logs", arguments={"lines": 5, "level": "error"}
                ),
            ],
            meta=MessageMeta(model="openai/gpt-5"),
        ),
        Message.tool(
            [
                ToolResultBlock(call_id="call_Zx81", content="200 lines of INFO"),
                ToolResultBlock(call_id="call_Zx82", content="disk full", is_error=True),
            ]
        ),
    ]


async def test_own_turns_are_replayed_part_for_part_with_signatures(provider, server, wire):  # type: ignore[no-untyped-def]
    thought_sig, text_sig, call_sig = wire.sig("thought"), wire.sig("text"), wire.sig("call")
    own = Message(
        role="assistant",
        content=[
            ThinkingBlock(text="Plan: call the tool.", signature=thought_sig),
            TextBlock.model_validate({"text": "Calling.", "thought_signature": text_sig}),
            ToolCallBlock.model_validate(
                {
                    "id": "call_x_0",
                    "name": "lookup",
                    "arguments": {"q": "é"},
                    "thought_signature": call_sig,
                }
            ),
        ],
        meta=MessageMeta(model="google/gemini-2.5-flash"),
    )
    contents = await send(
        provider,
        server,
        wire,
        [
            Message.user("Look it up"),
            own,
            Message.tool([ToolResultBlock(call_id="call_x_0", content="found")]),
        ],
    )
    thought_part, text_part, call_part = contents[1]["parts"]
    assert thought_part["text"] == "Plan: call the tool." and thought_part["thought"] is True
    assert wire.same_bytes(thought_part["thoughtSignature"], thought_sig)
    assert text_part["text"] == "Calling."
    assert wire.same_bytes(text_part["thoughtSignature"], text_sig)
    assert call_part["functionCall"] == {"name": "lookup", "args": {"q": "é"}}
    assert wire.same_bytes(call_part["thoughtSignature"], call_sig)
    assert contents[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "lookup", "response": {"output": "found"}}}],
    }


async def test_signatures_are_not_sent_to_a_different_gemini_model(provider, server, wire):  # type: ignore[no-untyped-def]
    own = Message(
        role="assistant",
        content=[
            ThinkingBlock(text="Plan.", signature=wire.sig("a")),
            TextBlock.model_validate({"text": "Answer.", "thought_signature": wire.sig("b")}),
        ],
        meta=MessageMeta(model="google/gemini-2.5-pro"),
    )
    contents = await send(provider, server, wire, [Message.user("Q"), own, Message.user("And?")])
    assert contents[1]["parts"] == [{"text": "<thinking>\nPlan.\n</thinking>"}, {"text": "Answer."}]


async def test_foreign_history_is_downgraded_and_answered_by_name(provider, server, wire):  # type: ignore[no-untyped-def]
    contents = await send(provider, server, wire, foreign_history())

    assert [c["role"] for c in contents] == ["user", "model", "user", "user", "model", "user"]
    claude_turn = contents[1]["parts"]
    assert claude_turn == [
        {"text": "<thinking>\nI should take a screenshot first.\n</thinking>"},
        {"text": "Taking a screenshot."},
        {"functionCall": {"name": "screenshot", "args": {"url": "/dash"}}},
    ]
    [screenshot] = [p["functionResponse"] for p in contents[2]["parts"]]
    assert screenshot["name"] == "screenshot"
    assert "attached in the next user message" in screenshot["response"]["output"]
    rehomed = contents[3]["parts"]
    assert "toolu_01A09q90qw90lq917835lq9" in rehomed[0]["text"]
    assert wire.same_bytes(wire.field(rehomed[1], "inlineData")["data"], PNG.data or "")

    openai_turn = contents[4]["parts"]
    assert openai_turn[0] == {"text": "<thinking>\nNeed the logs too.\n</thinking>"}
    assert [p["functionCall"] for p in openai_turn[1:]] == [
        {"name": "read_logs", "args": {"lines": 20}},
        {"name": "read_logs", "args": {"lines": 5, "level": "error"}},
    ]
    assert [p["functionResponse"] for p in contents[5]["parts"]] == [
        {"name": "read_logs", "response": {"output": "200 lines of INFO"}},
        {"name": "read_logs", "response": {"error": "disk full"}},
    ]
    assert "thoughtSignature" not in str(contents)
    assert "anthropic/sig" not in str(contents) and "EmwKAhgBEgy3opaque" not in str(contents)


async def test_foreign_calls_get_the_documented_placeholder_signature_on_gemini_3(
    provider, server, wire
):  # type: ignore[no-untyped-def]
    contents = await send(provider, server, wire, foreign_history(), model="gemini-3-pro-preview")

    claude_calls = [p for p in contents[1]["parts"] if "functionCall" in p]
    openai_calls = [p for p in contents[3]["parts"] if "functionCall" in p]
    for first in (claude_calls[0], openai_calls[0]):
        assert wire.same_bytes(first["thoughtSignature"], "skip_thought_signature_validator")
    assert "thoughtSignature" not in openai_calls[1]
    assert base64.urlsafe_b64encode(SKIP_SIGNATURE) == b"skip_thought_signature_validator"
    # Gemini 3 takes the image inside the function response itself.
    [screenshot] = [p["functionResponse"] for p in contents[2]["parts"]]
    assert screenshot["response"] == {"output": "Captured."}
    [media] = screenshot["parts"]
    assert wire.same_bytes(wire.field(media, "inlineData")["data"], PNG.data or "")


async def test_gemini_issued_call_ids_are_echoed_on_call_and_response(provider, server, wire):  # type: ignore[no-untyped-def]
    own = Message(
        role="assistant",
        content=[
            ToolCallBlock.model_validate(
                {"id": "fc_9", "name": "lookup", "arguments": {}, "gemini_id": "fc_9"}
            )
        ],
        meta=MessageMeta(model="google/gemini-2.5-flash"),
    )
    contents = await send(
        provider,
        server,
        wire,
        [Message.user("Q"), own, Message.tool([ToolResultBlock(call_id="fc_9", content="x")])],
    )
    assert contents[1]["parts"][0]["functionCall"] == {"name": "lookup", "args": {}, "id": "fc_9"}
    assert contents[2]["parts"][0]["functionResponse"] == {
        "name": "lookup",
        "id": "fc_9",
        "response": {"output": "x"},
    }


async def test_user_images_and_system_messages(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(wire.reply("A cat."))
    request = ModelRequest(
        model="gemini-2.5-flash",
        system="Describe images.",
        messages=[
            Message.system("Answer in English."),
            Message.user(
                "What is this?", PNG, ImageBlock(url="gs://bucket/cat.jpg", mime_type="image/jpeg")
            ),
        ],
        capabilities=provider.capabilities("gemini-2.5-flash"),
    )
    [e async for e in provider.stream(request)]
    payload = server.requests[-1].json()
    assert payload["systemInstruction"]["parts"] == [
        {"text": "Describe images.\n\nAnswer in English."}
    ]
    text_part, inline, by_uri = payload["contents"][0]["parts"]
    assert text_part == {"text": "What is this?"}
    assert wire.field(wire.field(inline, "inlineData"), "mimeType") == "image/png"
    file_data = wire.field(by_uri, "fileData")
    assert wire.field(file_data, "fileUri") == "gs://bucket/cat.jpg"
    assert wire.field(file_data, "mimeType") == "image/jpeg"


async def test_undecodable_image_data_is_an_invalid_request(provider, server):  # type: ignore[no-untyped-def]
    from tether.errors import InvalidRequestError

    broken = Message.user("Look", ImageBlock(mime_type="image/png", data="not base64!!"))
    request = ModelRequest(model="gemini-2.5-flash", messages=[broken])
    with pytest.raises(InvalidRequestError, match="base64"):
        [e async for e in provider.stream(request)]
    assert server.requests == []
