"""What the client sends: roles, tool-result placement, cache breakpoints, replayed or
downgraded thinking, for histories written by this provider or by another one."""

from __future__ import annotations

import base64

from tether import Message
from tether.messages import (
    ImageBlock,
    MessageMeta,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tether.provider import ModelRequest, ThinkingConfig, ToolDefinition
from tether_testing.http import FakeResponse

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


async def send(fake_server, make_provider, wire, request, **provider_config):
    fake_server.queue(wire.text_reply("ok"))
    async for _ in make_provider(**provider_config).stream(request):
        pass
    return fake_server.requests[-1].json()


def assistant(model, *blocks):
    return Message(role="assistant", content=list(blocks), meta=MessageMeta(model=model))


def foreign_history():
    """A conversation written by an OpenAI model: reasoning, a tool call with a foreign
    id, a result with an image (re-homed into a user message by the runner)."""
    return [
        Message.user("Describe chart.png"),
        assistant(
            "openai/gpt-5",
            ThinkingBlock(text="I should open the file.", signature="rs_foreign_sig"),
            ThinkingBlock(text="", redacted=True, data="foreign-encrypted"),
            TextBlock(text="Opening it."),
            ToolCallBlock(id="call:42/openai", name="read_image", arguments={"path": "chart.png"}),
        ),
        Message.tool(
            [
                ToolResultBlock(
                    call_id="call:42/openai",
                    content=[TextBlock(text="[1 image(s) attached in the next user message]")],
                )
            ]
        ),
        Message(
            role="user",
            content=[
                TextBlock(text="Images returned by tool call call:42/openai:"),
                ImageBlock(data=PNG),
            ],
        ),
    ]


async def test_foreign_history_is_valid_for_the_messages_api(fake_server, make_provider, wire):
    request = ModelRequest(
        model=wire.MODEL,
        messages=foreign_history(),
        system="You are terse.",
        tools=[ToolDefinition("read_image", "Read an image.", SCHEMA)],
        thinking=ThinkingConfig(budget_tokens=2048),
    )
    sent = await send(fake_server, make_provider, wire, request)
    messages = sent["messages"]

    # roles alternate; the tool message and the re-homed image message form one user turn
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    reply = messages[1]["content"]
    # foreign reasoning is plain text; foreign redacted reasoning is dropped
    assert reply[0] == {"type": "text", "text": "<thinking>\nI should open the file.\n</thinking>"}
    assert not any(b["type"] in ("thinking", "redacted_thinking") for b in reply)
    tool_use = reply[-1]
    assert tool_use["type"] == "tool_use" and tool_use["input"] == {"path": "chart.png"}
    assert tool_use["id"] != "call:42/openai"  # the API would reject ':' and '/'
    answer = messages[2]["content"]
    assert answer[0]["type"] == "tool_result" and answer[0]["tool_use_id"] == tool_use["id"]
    assert answer[-1]["type"] == "image" and answer[-1]["source"]["data"] == PNG
    # a tool-use turn without our own thinking cannot be continued with thinking on
    assert "thinking" not in sent


async def test_id_rewriting_is_stable_across_requests(fake_server, make_provider, wire):
    request = ModelRequest(model=wire.MODEL, messages=foreign_history())
    first = await send(fake_server, make_provider, wire, request)
    second = await send(fake_server, make_provider, wire, request)
    assert first["messages"][1]["content"][-1]["id"] == second["messages"][1]["content"][-1]["id"]


async def test_thinking_from_another_claude_model_is_downgraded(fake_server, make_provider, wire):
    history = [
        Message.user("q"),
        assistant(
            "anthropic/claude-opus-4-5",
            ThinkingBlock(text="deep thought", signature="sig-opus"),
            TextBlock(text="a"),
        ),
        Message.user("q2"),
    ]
    sent = await send(
        fake_server, make_provider, wire, ModelRequest(model=wire.MODEL, messages=history)
    )
    assert sent["messages"][1]["content"] == [
        {"type": "text", "text": "<thinking>\ndeep thought\n</thinking>"},
        {"type": "text", "text": "a"},
    ]


async def test_tool_results_with_images_are_sent_natively(fake_server, make_provider, wire):
    history = [
        Message.user("look"),
        assistant(
            f"anthropic/{wire.MODEL}", ToolCallBlock(id="toolu_1", name="shot", arguments={})
        ),
        Message.tool(
            [
                ToolResultBlock(
                    call_id="toolu_1",
                    content=[
                        TextBlock(text="screen:"),
                        ImageBlock(data=PNG, mime_type="image/png"),
                    ],
                    is_error=False,
                )
            ]
        ),
    ]
    sent = await send(
        fake_server, make_provider, wire, ModelRequest(model=wire.MODEL, messages=history)
    )
    result = sent["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert result["content"][0] == {"type": "text", "text": "screen:"}
    assert result["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": PNG,
    }


async def test_error_results_are_flagged(fake_server, make_provider, wire):
    history = [
        Message.user("x"),
        assistant(f"anthropic/{wire.MODEL}", ToolCallBlock(id="toolu_1", name="f", arguments={})),
        Message.tool([ToolResultBlock(call_id="toolu_1", content="boom", is_error=True)]),
    ]
    sent = await send(
        fake_server, make_provider, wire, ModelRequest(model=wire.MODEL, messages=history)
    )
    assert sent["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "boom",
        "is_error": True,
        "cache_control": {"type": "ephemeral"},
    }


def long_conversation(model):
    history = [Message.user("first")]
    for turn in range(3):
        call = f"toolu_{turn}"
        history.append(
            assistant(
                f"anthropic/{model}",
                TextBlock(text=f"step {turn}"),
                ToolCallBlock(id=call, name="f", arguments={}),
            )
        )
        history.append(Message.tool([ToolResultBlock(call_id=call, content=f"result {turn}")]))
    return history


def breakpoints(sent):
    marks = []
    for i, block in enumerate(sent.get("system", [])):
        if "cache_control" in block:
            marks.append(("system", i))
    for i, tool in enumerate(sent.get("tools", [])):
        if "cache_control" in tool:
            marks.append(("tools", i))
    for m, message in enumerate(sent["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                marks.append((m, b))
    return marks


async def test_cache_breakpoints_after_system_and_tools_and_the_last_messages(
    fake_server, make_provider, wire
):
    request = ModelRequest(
        model=wire.MODEL,
        messages=long_conversation(wire.MODEL),
        system="System prompt.",
        tools=[ToolDefinition("f", "F.", SCHEMA), ToolDefinition("g", "G.", SCHEMA)],
    )
    sent = await send(fake_server, make_provider, wire, request)
    last = len(sent["messages"]) - 1
    # system (which caches tools too), the newest message, the previous user turn
    assert breakpoints(sent) == [("system", 0), (last - 2, 0), (last, 0)]
    assert len(breakpoints(sent)) <= 4


async def test_without_a_system_prompt_the_tools_carry_the_breakpoint(
    fake_server, make_provider, wire
):
    request = ModelRequest(
        model=wire.MODEL, messages=[Message.user("hi")], tools=[ToolDefinition("f", "F.", SCHEMA)]
    )
    sent = await send(fake_server, make_provider, wire, request)
    assert breakpoints(sent) == [("tools", 0), (0, 0)]


async def test_breakpoints_skip_thinking_blocks_and_honour_ttl(fake_server, make_provider, wire):
    history = [
        Message.user("q"),
        assistant(
            f"anthropic/{wire.MODEL}",
            TextBlock(text="answer"),
            ThinkingBlock(text="t", signature="s"),
        ),
    ]
    sent = await send(
        fake_server,
        make_provider,
        wire,
        ModelRequest(model=wire.MODEL, messages=history, settings={"cache_ttl": "1h"}),
    )
    assert sent["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in sent["messages"][1]["content"][1]


async def test_caching_can_be_switched_off(fake_server, make_provider, wire):
    request = ModelRequest(
        model=wire.MODEL,
        messages=[Message.user("hi")],
        system="s",
        settings={"prompt_caching": False},
    )
    sent = await send(fake_server, make_provider, wire, request)
    assert breakpoints(sent) == []


async def test_adaptive_models_get_adaptive_thinking_and_effort(fake_server, make_provider, wire):
    request = ModelRequest(
        model="claude-opus-5-5",
        messages=[Message.user("hi")],
        thinking=ThinkingConfig(effort="high"),
        temperature=0.2,
    )
    sent = await send(fake_server, make_provider, wire, request)
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert sent["output_config"] == {"effort": "high"}
    assert "temperature" not in sent


async def test_temperature_is_sent_where_the_model_accepts_it(fake_server, make_provider, wire):
    sent = await send(
        fake_server,
        make_provider,
        wire,
        ModelRequest(model=wire.MODEL, messages=[Message.user("hi")], temperature=0.3),
    )
    assert sent["temperature"] == 0.3
    sent = await send(
        fake_server,
        make_provider,
        wire,
        ModelRequest(model="claude-sonnet-5-5", messages=[Message.user("hi")], temperature=0.3),
    )
    assert "temperature" not in sent


async def test_max_tokens_defaults_to_the_model_limit_and_leaves_room_for_thinking(
    fake_server, make_provider, wire
):
    sent = await send(
        fake_server,
        make_provider,
        wire,
        ModelRequest(model=wire.MODEL, messages=[Message.user("hi")]),
    )
    assert sent["max_tokens"] == 64_000
    request = ModelRequest(
        model=wire.MODEL,
        messages=[Message.user("hi")],
        max_output_tokens=1000,
        thinking=ThinkingConfig(budget_tokens=4000),
    )
    sent = await send(fake_server, make_provider, wire, request)
    assert sent["max_tokens"] > sent["thinking"]["budget_tokens"] == 4000


async def test_system_messages_in_the_history_join_the_system_prompt(
    fake_server, make_provider, wire
):
    request = ModelRequest(
        model=wire.MODEL,
        messages=[Message.system("Extra rule."), Message.user("hi")],
        system="Base.",
    )
    sent = await send(fake_server, make_provider, wire, request)
    assert [b["text"] for b in sent["system"]] == ["Base.", "Extra rule."]
    assert [m["role"] for m in sent["messages"]] == ["user"]


async def test_base_url_from_the_sdk_environment_variable_keeps_working(
    fake_server, monkeypatch, wire
):
    from tether.config import ProviderConfig
    from tether_anthropic.provider import AnthropicProvider

    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.url)
    fake_server.queue(FakeResponse.sse(wire.reply(wire.text_block(0, ["via env"]))))
    provider = AnthropicProvider(ProviderConfig(api_key="k"))
    texts = [
        e.text
        async for e in provider.stream(
            ModelRequest(model=wire.MODEL, messages=[Message.user("hi")])
        )
        if hasattr(e, "text")
    ]
    assert texts == ["via env"]
    await provider.aclose()
