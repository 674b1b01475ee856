"""GoogleProvider.stream() against a loopback server speaking the Gemini SSE wire format."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from tether.errors import ProviderConnectionError, ProviderError
from tether.events import TextDelta, ThinkingDelta
from tether.messages import Message, StopReason, TextBlock, ThinkingBlock, ToolCallBlock
from tether.provider import (
    ModelRequest,
    ModelResponse,
    ThinkingConfig,
    ToolCallReady,
    ToolDefinition,
)
from tether_google import GoogleProvider
from tether_testing.http import FakeResponse, collect_announcing, gated_chunks

WEATHER = ToolDefinition(
    name="get_weather",
    description="Forecast for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def request(provider: GoogleProvider, prompt: str = "Hi", **kwargs: object) -> ModelRequest:
    model = str(kwargs.pop("model", "gemini-2.5-flash"))
    return ModelRequest(
        model=model,
        messages=[Message.user(prompt)],
        capabilities=provider.capabilities(model),
        **kwargs,  # type: ignore[arg-type]
    )


async def collect(
    provider: GoogleProvider, req: ModelRequest
) -> tuple[list[object], ModelResponse]:
    events = [event async for event in provider.stream(req)]
    assert isinstance(events[-1], ModelResponse)
    return events[:-1], events[-1]


@pytest.fixture
async def provider(provider_config):  # type: ignore[no-untyped-def]
    google = GoogleProvider(provider_config)
    yield google
    await google.aclose()


async def test_text_streams_as_deltas_and_assembles_one_message(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(wire.text("Hello")),
            wire.chunk(wire.text(", wor")),
            wire.chunk(
                wire.text("ld!"),
                finish="STOP",
                usage_metadata=wire.usage(prompt=1200, output=4, cached=1024, thoughts=30),
            ),
        )
    )
    deltas, response = await collect(
        provider, request(provider, system="Be brief.", max_output_tokens=256, temperature=0.2)
    )

    assert deltas == [TextDelta("Hello"), TextDelta(", wor"), TextDelta("ld!")]
    assert response.message.role == "assistant"
    assert response.message.content == [TextBlock(text="Hello, world!")]
    assert response.message.meta.model == "google/gemini-2.5-flash"
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage.input_tokens == 1200
    assert response.usage.cache_read_tokens == 1024
    assert response.usage.output_tokens == 34
    assert response.usage.reasoning_tokens == 30

    sent = server.requests[0]
    assert sent.method == "POST"
    assert sent.path.endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert sent.headers["x-goog-api-key"] == wire.key
    payload = sent.json()
    assert payload["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert payload["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert payload["generationConfig"]["maxOutputTokens"] == 256
    assert payload["generationConfig"]["temperature"] == 0.2


async def test_each_delta_is_yielded_before_the_next_chunk_is_sent(provider, server, wire):  # type: ignore[no-untyped-def]
    release = threading.Event()
    first = FakeResponse.sse([(None, wire.chunk(wire.text("first")))]).chunks
    rest = FakeResponse.sse([(None, wire.chunk(wire.text(" second"), finish="STOP"))]).chunks
    assert first is not None and rest is not None

    def gated() -> Iterator[bytes]:
        yield from first
        release.wait(timeout=30)
        yield from rest

    server.queue(FakeResponse(headers={"content-type": "text/event-stream"}, chunks=gated()))  # type: ignore[arg-type]
    events = provider.stream(request(provider))
    # The server holds back the second chunk until the first delta has reached us.
    assert await asyncio.wait_for(anext(events), 30) == TextDelta("first")
    release.set()
    remaining = [event async for event in events]
    assert remaining[0] == TextDelta(" second")
    assert isinstance(remaining[-1], ModelResponse)
    assert remaining[-1].message.text == "first second"


async def test_function_call_with_arguments_split_inside_strings_and_utf8(provider, server, wire):  # type: ignore[no-untyped-def]
    args = {"city": "São Paulo — 東京", "note": 'say "hi"', "days": 3}
    response_bytes = b"".join(
        FakeResponse.sse(
            [(None, wire.chunk(wire.function_call("get_weather", args), finish="STOP"))]
        ).chunks
        or []
    )
    inside_multibyte = response_bytes.index("東".encode()) + 1
    inside_string = response_bytes.index(b"Paulo") + 2
    inside_escape = response_bytes.index(b'\\"hi') + 1
    server.queue(
        wire.stream(
            wire.chunk(wire.function_call("get_weather", args), finish="STOP"),
            split_at=(inside_string, inside_multibyte, inside_escape),
        )
    )
    deltas, response = await collect(provider, request(provider, tools=[WEATHER]))

    [call] = response.message.tool_calls
    assert deltas == [ToolCallReady(call, 0)]  # a function-call part arrives whole
    assert call.name == "get_weather"
    assert call.arguments == args
    assert call.id
    assert response.stop_reason is StopReason.TOOL_USE
    declaration = server.requests[0].json()["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather"
    assert wire.field(declaration, "parametersJsonSchema") == dict(WEATHER.parameters)


async def test_parallel_function_calls_get_distinct_stable_ids(provider, server, wire):  # type: ignore[no-untyped-def]
    signature = wire.sig("parallel")
    server.queue(
        wire.stream(
            wire.chunk(wire.text("Checking both.")),
            wire.chunk(
                wire.function_call("get_weather", {"city": "Paris"}, signature),
                wire.function_call("get_weather", {"city": "Oslo"}),
                finish="STOP",
            ),
        )
    )
    _, response = await collect(provider, request(provider, tools=[WEATHER]))

    calls = response.message.tool_calls
    assert [c.arguments["city"] for c in calls] == ["Paris", "Oslo"]
    assert len({c.id for c in calls}) == 2
    assert all(response.message.id[:16] in c.id for c in calls)
    assert calls[0].thought_signature == signature  # type: ignore[attr-defined]
    assert not hasattr(calls[1], "thought_signature")
    assert response.stop_reason is StopReason.TOOL_USE
    # The ids survive a session round trip unchanged.
    again = Message.from_json(response.message.to_json())
    assert [c.id for c in again.tool_calls] == [c.id for c in calls]


async def test_thought_parts_stream_as_thinking_with_their_signature(provider, server, wire):  # type: ignore[no-untyped-def]
    signature = wire.sig("thought")
    server.queue(
        wire.stream(
            wire.chunk(wire.thought("**Planning**\nThe user wants")),
            wire.chunk(wire.thought(" a greeting.", signature)),
            wire.chunk(wire.text("Hello!"), finish="STOP", usage_metadata=wire.usage(thoughts=120)),
        )
    )
    deltas, response = await collect(
        provider, request(provider, thinking=ThinkingConfig(budget_tokens=2048))
    )

    assert deltas == [
        ThinkingDelta("**Planning**\nThe user wants"),
        ThinkingDelta(" a greeting.", signature),
        TextDelta("Hello!"),
    ]
    thinking, answer = response.message.content
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.text == "**Planning**\nThe user wants a greeting."
    assert thinking.signature == signature
    assert answer == TextBlock(text="Hello!")
    assert response.usage.reasoning_tokens == 120
    config = server.requests[0].json()["generationConfig"]
    thinking_config = wire.field(config, "thinkingConfig")
    assert wire.field(thinking_config, "includeThoughts") is True
    assert wire.field(thinking_config, "thinkingBudget") == 2048


async def test_signature_on_a_text_part_stays_on_that_text(provider, server, wire):  # type: ignore[no-untyped-def]
    signature = wire.sig("text")
    server.queue(
        wire.stream(
            wire.chunk(wire.text("Part one")),
            wire.chunk(wire.text("", signature)),
            wire.chunk(wire.text("Part two"), finish="STOP"),
        )
    )
    _, response = await collect(provider, request(provider))
    first, second = response.message.content
    assert isinstance(first, TextBlock) and isinstance(second, TextBlock)
    assert first.text == "Part one"
    assert first.thought_signature == signature  # type: ignore[attr-defined]
    assert second.text == "Part two"
    assert not hasattr(second, "thought_signature")
    assert response.message.text == "Part onePart two"


async def test_max_tokens_stop(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(wire.reply("This answer is cut", finish="MAX_TOKENS"))
    _, response = await collect(provider, request(provider, max_output_tokens=4))
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.message.text == "This answer is cut"


@pytest.mark.parametrize(
    "reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"]
)
async def test_safety_finish_reasons_are_refusals(provider, server, wire, reason):  # type: ignore[no-untyped-def]
    server.queue(wire.stream(wire.chunk(finish=reason)))
    _, response = await collect(provider, request(provider))
    assert response.stop_reason is StopReason.REFUSAL
    assert response.message.meta.finish_reason == reason  # type: ignore[attr-defined]


async def test_blocked_prompt_is_a_refusal(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            {
                "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
                "modelVersion": wire.model,
            }
        )
    )
    _, response = await collect(provider, request(provider))
    assert response.stop_reason is StopReason.REFUSAL
    assert response.message.content == []
    assert response.message.meta.block_reason == "PROHIBITED_CONTENT"  # type: ignore[attr-defined]
    assert response.usage.input_tokens == 9


async def test_a_stream_that_ends_without_a_finish_reason_is_a_dropped_connection(
    provider, server, wire
):  # type: ignore[no-untyped-def]
    server.queue(wire.stream(wire.chunk(wire.text("Half an ans"))))
    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider, request(provider))
    assert caught.value.retryable


async def test_malformed_function_call_is_retryable(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(
                finish="MALFORMED_FUNCTION_CALL",
                finish_message="Malformed function call: get_weather(city=)",
            )
        )
    )
    with pytest.raises(ProviderError) as caught:
        await collect(provider, request(provider, tools=[WEATHER]))
    assert caught.value.retryable
    assert "MALFORMED_FUNCTION_CALL" in str(caught.value)


async def test_tool_calls_arrive_as_tool_call_blocks(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(wire.chunk(wire.function_call("get_weather", {"city": "Lima"}), finish="STOP"))
    )
    _, response = await collect(provider, request(provider, tools=[WEATHER]))
    [block] = response.message.content
    assert isinstance(block, ToolCallBlock)
    assert block.arguments == {"city": "Lima"}


async def test_a_function_call_is_announced_complete_with_the_chunk_that_carries_it(
    provider, server, wire
):  # type: ignore[no-untyped-def]
    """A function-call part arrives whole: the server sends the next chunk only once the
    client has announced the call, so ToolCallReady comes with its chunk, not at the end."""
    payload = wire.stream(
        wire.chunk(wire.text("Looking."), wire.function_call("lookup", {"key": "a"})),
        wire.chunk(wire.function_call("lookup", {"key": "bee"}), finish="STOP"),
    )
    announced = threading.Event()
    waited: list[bool] = []
    chunks = gated_chunks(payload.chunks, [(b"bee", announced)], waited)
    server.queue(FakeResponse(headers=payload.headers, chunks=chunks))  # type: ignore[arg-type]
    seen = await collect_announcing(
        provider.stream(request(provider, tools=[WEATHER])), [announced]
    )
    assert waited == [True]
    calls = seen[-1].message.tool_calls
    assert [type(e).__name__ for e in seen] == [
        "TextDelta",
        "ToolCallReady",
        "ToolCallReady",
        "ModelResponse",
    ]
    assert [(e.call, e.index) for e in seen[1:3]] == [(calls[0], 0), (calls[1], 1)]
    assert [c.arguments for c in calls] == [{"key": "a"}, {"key": "bee"}]
