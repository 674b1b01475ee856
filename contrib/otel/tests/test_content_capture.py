"""With ``capture_content``: what each ``chat`` span says was sent and received — the
conversation so far as its input, the answer and the tool calls the model made as its
output — and a structured-output run that ends its span and is not kept in memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_otel import OtelPlugin


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def capturing() -> tuple[OtelPlugin, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelPlugin(tracer_provider=provider, capture_content=True), exporter


def chats(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    return sorted(spans, key=lambda s: s.start_time or 0)


def attribute(span: ReadableSpan, key: str) -> Any:
    return json.loads(str((span.attributes or {})[key]))


async def test_chat_spans_carry_the_input_and_the_tool_calls_the_model_made() -> None:
    plugin, exporter = capturing()
    provider = ScriptedProvider(
        [Reply(text="Adding.", tool_calls=[call("add", a=1, b=2)]), Reply(text="It is 3.")]
    )
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[plugin])
    await agent.run("What is 1 + 2?")
    first, second = chats(exporter)

    assert attribute(first, "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "What is 1 + 2?"}]}
    ]
    [answer] = attribute(first, "gen_ai.output.messages")
    assert answer["finish_reason"] == "tool_use"
    assert answer["parts"][0] == {"type": "text", "content": "Adding."}
    [tool_call] = [p for p in answer["parts"] if p["type"] == "tool_call"]
    assert tool_call["name"] == "add" and tool_call["arguments"] == {"a": 1, "b": 2}

    history = attribute(second, "gen_ai.input.messages")
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[1]["parts"][1]["id"] == tool_call["id"]
    assert history[2]["parts"] == [
        {"type": "tool_call_response", "id": tool_call["id"], "response": "3"}
    ]
    assert attribute(second, "gen_ai.output.messages")[0]["parts"] == [
        {"type": "text", "content": "It is 3."}
    ]


class City(BaseModel):
    name: str
    country: str


async def test_a_structured_output_run_ends_its_span_and_is_not_kept() -> None:
    plugin, exporter = capturing()
    provider = ScriptedProvider([Reply(text='{"name": "Oslo", "country": "NO"}')] * 3)
    provider.default_capabilities = provider.default_capabilities.updated(
        {"structured_output": True}
    )
    agent = tether.Agent(provider, config=Config(), plugins=[plugin], output_type=City)
    for _ in range(3):
        result = await agent.run("A city?")
        assert result.output == City(name="Oslo", country="NO")
    runs = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert len(runs) == 3
    assert attribute(runs[0], "gen_ai.output.messages")[0]["parts"][0]["content"] == (
        '{"name":"Oslo","country":"NO"}'
    )
    assert plugin.observer._runs == {}  # nothing left behind


async def test_a_failed_model_request_is_an_error_chat_span_with_its_input() -> None:
    from tether.testing import auth_failed

    plugin, exporter = capturing()
    agent = tether.Agent(ScriptedProvider([auth_failed()]), config=Config(), plugins=[plugin])
    with pytest.raises(tether.errors.AuthenticationError):
        await agent.run("hello?")
    [chat] = chats(exporter)
    assert chat.status.status_code is StatusCode.ERROR
    assert attribute(chat, "gen_ai.input.messages")[0]["parts"][0]["content"] == "hello?"
