"""Responses streamed by the real SDK from a loopback server speaking the Messages API."""

from __future__ import annotations

import json

from tether import Message
from tether.events import Done, TextDelta, ThinkingDelta, ToolEnd, ToolStart, TurnEnd
from tether.messages import StopReason, TextBlock, ThinkingBlock, ToolCallBlock
from tether.provider import ModelRequest, ModelResponse, ToolDefinition
from tether.result import Outcome
from tether_testing.http import FakeResponse, collect_announcing, gated_chunks


async def collect(provider, request):
    return [event async for event in provider.stream(request)]


async def test_text_streams_delta_by_delta_with_usage_in_tether_convention(
    fake_server, make_provider, wire
):
    fake_server.queue(
        FakeResponse.sse(
            wire.reply(
                wire.text_block(0, ["Hel", "lo, ", "world"]),
                input_tokens=5,
                cache_read=100,
                cache_write=20,
            )
        )
    )
    provider = make_provider()
    events = await collect(provider, ModelRequest(model=wire.MODEL, messages=[Message.user("hi")]))

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo, ", "world"]
    response = events[-1]
    assert isinstance(response, ModelResponse)
    assert response.message.text == "Hello, world"
    assert response.stop_reason is StopReason.END_TURN
    assert response.message.meta.model == "anthropic/claude-haiku-4-5"
    # Anthropic's input_tokens excludes cached tokens; tether's counts all of them.
    assert response.usage.input_tokens == 125
    assert response.usage.cache_read_tokens == 100
    assert response.usage.cache_write_tokens == 20
    assert response.usage.output_tokens == 7


class GatedChunks(list):
    """Chunks that the server sends one by one, waiting before ``gate_on`` until the
    client signals that it has received everything before it."""

    def __init__(self, chunks, gate_on: bytes, gate) -> None:
        super().__init__(chunks)
        self.gate_on = gate_on
        self.gate = gate

    def __iter__(self):
        for chunk in list.__iter__(self):
            if self.gate_on in chunk:
                assert self.gate.wait(timeout=30), "the first delta was not delivered on its own"
            yield chunk


async def test_each_delta_reaches_the_consumer_before_the_next_is_sent(
    fake_server, make_provider, wire
):
    """No buffering: the server sends the second delta only after the consumer has
    received the first one."""
    import threading

    first_seen = threading.Event()
    payload = FakeResponse.sse(wire.reply(wire.text_block(0, ["one", "two"])))
    gated = GatedChunks(payload.chunks, b'"two"', first_seen)
    fake_server.queue(FakeResponse(status=200, headers=payload.headers, chunks=gated))
    seen = []
    async for event in make_provider().stream(
        ModelRequest(model=wire.MODEL, messages=[Message.user("hi")])
    ):
        if isinstance(event, TextDelta):
            seen.append(event.text)
            if event.text == "one":
                first_seen.set()
    assert seen == ["one", "two"]


async def test_tool_arguments_split_inside_strings_and_multibyte_characters(
    fake_server, make_provider, wire
):
    arguments = {"city": "São Paulo 東京", "note": 'say "hi"'}
    encoded = json.dumps(arguments, ensure_ascii=False)
    fragments = [encoded[:9], encoded[9:13], encoded[13:24], encoded[24:]]  # cuts inside strings
    events = wire.reply(
        wire.text_block(0, ["Checking."]),
        wire.tool_block(1, "toolu_01", "weather", fragments),
        stop_reason="tool_use",
    )
    body = FakeResponse.sse(events)
    raw = b"".join(body.chunks)
    # cut the byte stream inside the UTF-8 encodings of "ã" and "東"
    inside = [
        raw.index("ã".encode()) + 1,
        raw.index("東".encode()) + 1,
        raw.index("東".encode()) + 2,
    ]
    fake_server.queue(FakeResponse.sse(events, split_at=inside))

    provider = make_provider()
    events_out = await collect(
        provider, ModelRequest(model=wire.MODEL, messages=[Message.user("weather?")])
    )
    response = events_out[-1]
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.message.tool_calls == [
        ToolCallBlock(id="toolu_01", name="weather", arguments=arguments)
    ]
    assert [type(b) for b in response.message.content] == [TextBlock, ToolCallBlock]


async def test_parallel_tool_calls_run_and_are_answered_in_declared_order(
    fake_server, make_agent, wire
):
    calls = []

    def lookup(key: str) -> str:
        """Look a key up."""
        calls.append(key)
        return f"value of {key}"

    fake_server.queue(
        FakeResponse.sse(
            wire.reply(
                wire.tool_block(0, "toolu_a", "lookup", ['{"key":', ' "a"}']),
                wire.tool_block(1, "toolu_b", "lookup", ['{"ke', 'y": "b"}']),
                stop_reason="tool_use",
            )
        ),
        wire.text_reply("a and b"),
    )
    agent = make_agent(tools=[lookup])
    events = [e async for e in agent.stream("look up a and b")]

    assert sorted(calls) == ["a", "b"]
    assert [e.call_id for e in events if isinstance(e, ToolStart)] == ["toolu_a", "toolu_b"]
    assert {e.call_id for e in events if isinstance(e, ToolEnd)} == {"toolu_a", "toolu_b"}
    result = events[-1].result
    assert result.outcome is Outcome.COMPLETED and result.output == "a and b"

    second = fake_server.requests[1].json()
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    answers = second["messages"][2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in answers] == [
        ("tool_result", "toolu_a"),
        ("tool_result", "toolu_b"),
    ]
    assert answers[0]["content"] == "value of a"


async def test_arguments_that_are_not_a_json_object_are_kept_raw(fake_server, make_provider, wire):
    fake_server.queue(
        FakeResponse.sse(
            wire.reply(
                wire.tool_block(0, "toolu_x", "echo", ['["not", ', '"an object"]']),
                stop_reason="tool_use",
            )
        )
    )
    events = await collect(
        make_provider(), ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
    )
    call = events[-1].message.tool_calls[0]
    assert call.arguments == {}
    assert call.raw_arguments == '["not", "an object"]'


async def test_tool_call_without_arguments_gets_an_empty_object(fake_server, make_provider, wire):
    fake_server.queue(
        FakeResponse.sse(
            wire.reply(wire.tool_block(0, "toolu_n", "now", []), stop_reason="tool_use")
        )
    )
    events = await collect(
        make_provider(), ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
    )
    call = events[-1].message.tool_calls[0]
    assert call.arguments == {} and call.raw_arguments is None


async def test_thinking_streams_and_its_signature_is_echoed_on_the_next_request(
    fake_server, make_agent, wire
):
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    fake_server.queue(
        FakeResponse.sse(
            wire.reply(
                wire.thinking_block(0, ["Need to ", "add."], signature="sig-ABC=="),
                wire.redacted_block(1, "opaque-redacted-data"),
                wire.tool_block(2, "toolu_1", "add", ['{"a": 2, "b": 3}']),
                stop_reason="tool_use",
            )
        ),
        FakeResponse.sse(
            wire.reply(
                wire.thinking_block(0, ["Done."], signature="sig-2"), wire.text_block(1, ["5"])
            )
        ),
    )
    from tether.provider import ThinkingConfig

    agent = make_agent(tools=[add], thinking=ThinkingConfig(budget_tokens=4096))
    events = [e async for e in agent.stream("2+3?")]
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert [t.text for t in thinking if t.text] == ["Need to ", "add.", "Done."]
    assert [t.signature for t in thinking if t.signature] == ["sig-ABC==", "sig-2"]

    first = fake_server.requests[0].json()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "temperature" not in first

    replayed = fake_server.requests[1].json()["messages"][1]["content"]
    assert replayed[0] == {"type": "thinking", "thinking": "Need to add.", "signature": "sig-ABC=="}
    assert replayed[1] == {"type": "redacted_thinking", "data": "opaque-redacted-data"}
    assert replayed[2]["type"] == "tool_use" and replayed[2]["input"] == {"a": 2, "b": 3}

    result = events[-1].result
    assert result.output == "5"
    stored = result.messages[1].content
    assert isinstance(stored[0], ThinkingBlock) and stored[0].signature == "sig-ABC=="
    assert stored[1].redacted and stored[1].data == "opaque-redacted-data"


async def test_max_tokens_stop_ends_the_run_with_a_typed_outcome(fake_server, make_agent, wire):
    fake_server.queue(
        FakeResponse.sse(wire.reply(wire.text_block(0, ["A long ans"]), stop_reason="max_tokens"))
    )
    agent = make_agent()
    events = [e async for e in agent.stream("write a lot")]
    turn = next(e for e in events if isinstance(e, TurnEnd))
    assert turn.stop_reason is StopReason.MAX_TOKENS
    done = events[-1]
    assert isinstance(done, Done) and done.result.outcome is Outcome.MAX_TOKENS
    assert done.result.output == "A long ans"


async def test_refusal_stop_reason_becomes_a_refusal_outcome(fake_server, make_agent, wire):
    fake_server.queue(
        FakeResponse.sse(wire.reply(wire.text_block(0, ["I can't help"]), stop_reason="refusal"))
    )
    result = await make_agent().run("something bad")
    assert result.outcome is Outcome.REFUSAL


async def test_stop_sequence_and_pause_turn_are_mapped(fake_server, make_provider, wire):
    fake_server.queue(
        FakeResponse.sse(wire.reply(wire.text_block(0, ["x"]), stop_reason="stop_sequence")),
        FakeResponse.sse(wire.reply(wire.text_block(0, ["y"]), stop_reason="pause_turn")),
    )
    provider = make_provider()
    request = ModelRequest(model=wire.MODEL, messages=[Message.user("x")], stop_sequences=["END"])
    first = (await collect(provider, request))[-1]
    assert first.stop_reason is StopReason.STOP_SEQUENCE
    assert fake_server.requests[0].json()["stop_sequences"] == ["END"]
    second = (await collect(provider, request))[-1]
    assert second.stop_reason is StopReason.END_TURN
    assert second.message.meta.provider_stop_reason == "pause_turn"


async def test_tools_are_sent_with_their_schemas(fake_server, make_provider, wire):
    fake_server.queue(wire.text_reply("ok"))
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    request = ModelRequest(
        model=wire.MODEL,
        messages=[Message.user("x")],
        tools=[ToolDefinition("search", "Search the web.", schema)],
    )
    await collect(make_provider(), request)
    sent = fake_server.requests[0].json()
    assert sent["tools"][0]["name"] == "search"
    assert sent["tools"][0]["description"] == "Search the web."
    assert sent["tools"][0]["input_schema"] == schema
    assert sent["stream"] is True


async def test_final_usage_comes_from_message_delta_including_thinking_tokens(
    fake_server, make_provider, wire
):
    events = [
        wire.message_start(input_tokens=40, cache_read=0, cache_write=0),
        *wire.thinking_block(0, ["hmm"], signature="s"),
        *wire.text_block(1, ["ok"]),
        *wire.message_end(
            "end_turn",
            output_tokens=90,
            input_tokens=40,
            cache_read_input_tokens=1000,
            output_tokens_details={"thinking_tokens": 60},
        ),
    ]
    fake_server.queue(FakeResponse.sse(events))
    out = await collect(
        make_provider(), ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
    )
    usage = out[-1].usage
    assert (
        usage.input_tokens,
        usage.cache_read_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
    ) == (
        1040,
        1000,
        90,
        60,
    )


async def test_a_tool_call_is_announced_complete_at_its_content_block_stop(
    fake_server, make_provider, wire
):
    """The server sends what follows a tool_use block's content_block_stop only once the
    client has announced that call: ToolCallReady comes at the stop, not at the end."""
    import threading

    events = wire.reply(
        wire.text_block(0, ["Looking."]),
        wire.tool_block(1, "toolu_a", "lookup", ['{"key"', ': "a"}']),
        wire.tool_block(2, "toolu_b", "lookup", ['{"key": "b"}']),
        stop_reason="tool_use",
    )
    payload = FakeResponse.sse(events)
    announced = [threading.Event(), threading.Event()]
    gates = [(b'"index": 2', announced[0]), (b"message_delta", announced[1])]
    waited: list[bool] = []
    chunks = gated_chunks(payload.chunks, gates, waited)
    fake_server.queue(FakeResponse(status=200, headers=payload.headers, chunks=chunks))
    request = ModelRequest(model=wire.MODEL, messages=[Message.user("look")])
    seen = await collect_announcing(make_provider().stream(request), announced)
    assert waited == [True, True]
    response = seen[-1]
    calls = response.message.tool_calls
    assert [type(e).__name__ for e in seen] == [
        "TextDelta",
        "ToolCallReady",
        "ToolCallReady",
        "ModelResponse",
    ]
    assert [(e.call, e.index) for e in seen[1:3]] == [(calls[0], 0), (calls[1], 1)]
    assert calls[0] == ToolCallBlock(id="toolu_a", name="lookup", arguments={"key": "a"})
