"""tether.Agent running "google/..." models end to end over loopback HTTP: the tool loop,
retries, authentication failures, mid-stream failures and context-overflow compaction."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import tether
from tether import Agent
from tether.compaction import CompactionContext, CompactionResult
from tether.errors import (
    AuthenticationError,
    OverloadedError,
    ProviderConnectionError,
    RateLimitError,
)
from tether.events import Compaction, Retry, TextDelta, ThinkingDelta, ToolEnd
from tether.messages import ImageBlock, Message, TextBlock
from tether.provider import ThinkingConfig
from tether.runner import RetryPolicy
from tether.sessions import InMemorySession

PNG = ImageBlock.from_bytes(b"\x89PNG\r\n\x1a\n-chart-", "image/png")


@tether.tool
def get_weather(city: str) -> str:
    """Forecast for a city."""
    return f"Sunny in {city}, 24°C"


@tether.tool
def render_chart(city: str) -> list[TextBlock | ImageBlock]:
    """A temperature chart for a city."""
    return [TextBlock(text=f"Chart for {city}"), PNG]


@dataclass
class Sleeps:
    delays: list[float] = field(default_factory=list)

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def agent(config, model: str = "gemini-2.5-flash", **kwargs):  # type: ignore[no-untyped-def]
    return Agent(f"google/{model}", config=config, **kwargs)


async def run_events(agent_: Agent, prompt: str) -> list[object]:
    try:
        return [event async for event in agent_.stream(prompt)]
    finally:
        await agent_.aclose()


async def test_tool_loop_replays_the_call_with_its_signature_and_answers_by_name(
    config, server, wire
):  # type: ignore[no-untyped-def]
    signature = wire.sig("call")
    server.queue(
        wire.stream(
            wire.chunk(wire.text("Let me check.")),
            wire.chunk(
                wire.function_call("get_weather", {"city": "Paris"}, signature),
                wire.function_call("get_weather", {"city": "Oslo"}),
                finish="STOP",
            ),
        ),
        wire.reply("Paris and Oslo are sunny."),
    )
    result = await agent(config, tools=[get_weather]).run("Weather in Paris and Oslo?")

    assert result.ok
    assert result.output == "Paris and Oslo are sunny."
    assert result.tool_calls == 2
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]

    second = wire.contents_of(server.requests[1])
    assert [c["role"] for c in second] == ["user", "model", "user"]
    model_turn = second[1]["parts"]
    assert model_turn[0] == {"text": "Let me check."}
    assert model_turn[1]["functionCall"] == {"name": "get_weather", "args": {"city": "Paris"}}
    assert wire.same_bytes(model_turn[1]["thoughtSignature"], signature)
    assert model_turn[2] == {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
    responses = [p["functionResponse"] for p in second[2]["parts"]]
    assert responses == [
        {"name": "get_weather", "response": {"output": "Sunny in Paris, 24°C"}},
        {"name": "get_weather", "response": {"output": "Sunny in Oslo, 24°C"}},
    ]


async def test_prompt_prefix_stays_byte_stable_across_turns_for_implicit_caching(
    config, server, wire
):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(wire.chunk(wire.function_call("get_weather", {"city": "Rome"}), finish="STOP")),
        wire.reply("Sunny."),
    )
    await agent(config, system="You are terse.", tools=[get_weather]).run("Rome?")
    first, second = (r.json() for r in server.requests)
    assert first["systemInstruction"] == second["systemInstruction"]
    assert first["tools"] == second["tools"]
    assert second["contents"][: len(first["contents"])] == first["contents"]


async def test_tool_images_are_rehomed_for_models_without_multimodal_function_responses(
    config, server, wire
):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(wire.function_call("render_chart", {"city": "Kyiv"}), finish="STOP")
        ),
        wire.reply("Here is the chart."),
    )
    await agent(config, tools=[render_chart]).run("Chart for Kyiv?")
    contents = wire.contents_of(server.requests[1])
    assert [c["role"] for c in contents] == ["user", "model", "user", "user"]
    [response] = [p["functionResponse"] for p in contents[2]["parts"]]
    assert "inlineData" not in str(response) and "inline_data" not in str(response)
    assert "attached in the next user message" in response["response"]["output"]
    image = contents[3]["parts"][-1]
    blob = wire.field(image, "inlineData")
    assert wire.field(blob, "mimeType") == "image/png"
    assert wire.same_bytes(blob["data"], PNG.data or "")


async def test_tool_images_go_inside_the_function_response_for_gemini_3(config, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(
                wire.function_call("render_chart", {"city": "Kyiv"}, wire.sig("g3")), finish="STOP"
            )
        ),
        wire.reply("Here is the chart."),
    )
    await agent(config, model="gemini-3-pro-preview", tools=[render_chart]).run("Chart for Kyiv?")
    contents = wire.contents_of(server.requests[1])
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    response = contents[2]["parts"][0]["functionResponse"]
    assert response["response"] == {"output": "Chart for Kyiv"}
    [media] = response["parts"]
    blob = wire.field(media, "inlineData")
    assert wire.field(blob, "mimeType") == "image/png"
    assert wire.same_bytes(blob["data"], PNG.data or "")


async def test_rate_limit_waits_for_the_retry_info_delay_then_succeeds(config, server, wire):  # type: ignore[no-untyped-def]
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    quota = {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}
        ],
    }
    server.queue(
        wire.error(
            429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", quota, retry_info
        ),
        wire.reply("Hello after waiting."),
    )
    sleeps = Sleeps()
    events = await run_events(agent(config, retry=RetryPolicy(sleep=sleeps)), "Hi")

    [retry] = [e for e in events if isinstance(e, Retry)]
    assert retry.delay == 37.0
    assert isinstance(retry.error, RateLimitError)
    assert sleeps.delays == [37.0]
    assert events[-1].result.output == "Hello after waiting."  # type: ignore[attr-defined]
    assert len(server.requests) == 2


async def test_rate_limit_honours_the_retry_after_header(config, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(
            429, "RESOURCE_EXHAUSTED", "Resource has been exhausted.", headers={"retry-after": "12"}
        ),
        wire.reply("Done."),
    )
    sleeps = Sleeps()
    result = await agent(config, retry=RetryPolicy(sleep=sleeps)).run("Hi")
    assert result.output == "Done."
    assert sleeps.delays == [12.0]


async def test_unauthenticated_fails_at_once_naming_the_key_variables(config, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
    )
    sleeps = Sleeps()
    with pytest.raises(AuthenticationError) as caught:
        await agent(config, retry=RetryPolicy(sleep=sleeps)).run("Hi")
    message = str(caught.value)
    assert "GEMINI_API_KEY" in message and "GOOGLE_API_KEY" in message
    assert wire.key not in message
    assert sleeps.delays == []
    assert len(server.requests) == 1


async def test_invalid_api_key_reported_as_400_is_an_authentication_error(config, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
            },
        )
    )
    with pytest.raises(AuthenticationError, match="GEMINI_API_KEY"):
        await agent(config).run("Hi")
    assert len(server.requests) == 1


async def test_overloaded_mid_stream_is_retried_and_only_the_good_attempt_is_kept(
    config, server, wire
):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(wire.text("Partial ")),
            {
                "error": {
                    "code": 503,
                    "message": "The model is overloaded. Please try again later.",
                    "status": "UNAVAILABLE",
                }
            },
        ),
        wire.reply("Complete answer."),
    )
    sleeps = Sleeps()
    events = await run_events(agent(config, retry=RetryPolicy(sleep=sleeps)), "Hi")

    [retry] = [e for e in events if isinstance(e, Retry)]
    assert isinstance(retry.error, OverloadedError)
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "Partial ",
        "Complete",
        " answer.",
    ]
    result = events[-1].result  # type: ignore[attr-defined]
    assert [m.text for m in result.messages if m.role == "assistant"] == ["Complete answer."]


async def test_connection_dropped_mid_stream_is_retried_without_duplicating_text(
    config, server, wire
):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(wire.text("One")),
            wire.chunk(wire.text(" two")),
            wire.chunk(wire.text(" three"), finish="STOP"),
            drop_after=2,
        ),
        wire.reply("One two three"),
    )
    sleeps = Sleeps()
    events = await run_events(agent(config, retry=RetryPolicy(sleep=sleeps)), "Count")

    [retry] = [e for e in events if isinstance(e, Retry)]
    assert isinstance(retry.error, ProviderConnectionError)
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.output == "One two three"
    assert [m.text for m in result.messages if m.role == "assistant"] == ["One two three"]
    assert len(sleeps.delays) == 1
    assert result.retries == 1


@dataclass
class DropOldest:
    """A compaction strategy that keeps only the newest user message when forced."""

    name: str = "drop-oldest"
    forced: list[int] = field(default_factory=list)

    async def compact(self, context: CompactionContext) -> CompactionResult | None:
        if not context.force:
            return None
        self.forced.append(len(context.messages))
        return CompactionResult(
            messages=list(context.messages[-1:]), tokens_before=2_000_000, tokens_after=10
        )


async def test_context_overflow_compacts_once_and_retries(config, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1482091) exceeds the maximum number of tokens allowed (1048576).",
        ),
        wire.reply("Fits now."),
    )
    strategy = DropOldest()
    history = [
        Message.user("old question " * 50),
        Message(role="assistant", content=[TextBlock(text="old answer")]),
    ]
    session = InMemorySession()
    for message in history:
        session.append(message)
    runner = agent(config, compaction=strategy)
    events = [e async for e in runner.stream("New question", session=session)]

    assert strategy.forced == [3]
    [compaction] = [e for e in events if isinstance(e, Compaction)]
    assert compaction.strategy == "drop-oldest"
    assert events[-1].result.output == "Fits now."  # type: ignore[attr-defined]
    assert len(wire.contents_of(server.requests[0])) == 3
    assert wire.contents_of(server.requests[1]) == [
        {"role": "user", "parts": [{"text": "New question"}]}
    ]


async def test_missing_key_fails_at_the_first_request_not_at_construction(server, wire):  # type: ignore[no-untyped-def]
    config = tether.config.Config(providers={"google": {"base_url": server.url}})
    runner = agent(config)
    assert any(m.id == "gemini-2.5-flash" for m in runner.provider().catalogue())
    with pytest.raises(AuthenticationError) as caught:
        await runner.run("Hi")
    assert "GEMINI_API_KEY" in str(caught.value) and "GOOGLE_API_KEY" in str(caught.value)
    assert server.requests == []


async def test_tool_end_events_follow_the_function_calls(config, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.stream(
            wire.chunk(wire.function_call("get_weather", {"city": "Nairobi"}), finish="STOP")
        ),
        wire.reply("Warm."),
    )
    events = await run_events(agent(config, tools=[get_weather]), "Nairobi?")
    [end] = [e for e in events if isinstance(e, ToolEnd)]
    assert end.name == "get_weather"
    assert end.result.text == "Sunny in Nairobi, 24°C"


async def test_thinking_turn_is_replayed_with_its_signatures_on_the_next_request(
    config, server, wire
):  # type: ignore[no-untyped-def]
    thought_sig, call_sig = wire.sig("thinking"), wire.sig("first-call")
    server.queue(
        wire.stream(
            wire.chunk(wire.thought("The user wants Lima's weather; call the tool.", thought_sig)),
            wire.chunk(
                wire.function_call("get_weather", {"city": "Lima"}, call_sig),
                finish="STOP",
                usage_metadata=wire.usage(thoughts=64),
            ),
        ),
        wire.reply("Sunny in Lima."),
    )
    events = await run_events(
        agent(config, tools=[get_weather], thinking=ThinkingConfig(budget_tokens=512)),
        "Lima?",
    )
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert [t.text for t in thinking] == ["The user wants Lima's weather; call the tool."]
    assert thinking[0].signature == thought_sig
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.usage.reasoning_tokens == 64

    first, second = (r.json() for r in server.requests)
    assert (
        wire.field(wire.field(first["generationConfig"], "thinkingConfig"), "includeThoughts")
        is True
    )
    thought_part, call_part = second["contents"][1]["parts"]
    assert thought_part["thought"] is True
    assert thought_part["text"] == "The user wants Lima's weather; call the tool."
    assert wire.same_bytes(thought_part["thoughtSignature"], thought_sig)
    assert call_part["functionCall"] == {"name": "get_weather", "args": {"city": "Lima"}}
    assert wire.same_bytes(call_part["thoughtSignature"], call_sig)
