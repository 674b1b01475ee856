"""Whatever a run does — how many model calls, how many tool calls in each, which of them
fail or name no tool, whether it ends with an answer, an error or a limit — its spans form one
well-nested trace: every span ended, one ``chat`` span per model call, one
``execute_tool`` span per call with the outcome the run reported, each child inside its
run's time."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import tether
from tether.config import Config
from tether.events import Done, ToolEnd, TurnEnd
from tether.testing import Reply, ScriptedProvider, auth_failed, call
from tether_otel import OtelPlugin


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tether.tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("broken on purpose")


CALLS = st.sampled_from(["add", "broken", "missing"])
TURNS = st.lists(st.lists(CALLS, min_size=1, max_size=3), max_size=4)


def script(turns: list[list[str]], ending: str) -> list[Any]:
    replies: list[Any] = []
    for names in turns:
        calls = [call("add", a=1, b=2) if name == "add" else call(name) for name in names]
        replies.append(Reply(tool_calls=calls))
    replies.append(auth_failed() if ending == "error" else Reply(text="done"))
    return replies


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=TURNS, ending=st.sampled_from(["answer", "error"]))
def test_every_run_is_one_well_nested_trace(turns: list[list[str]], ending: str) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = tether.Agent(
        ScriptedProvider(script(turns, ending)),
        tools=[add, broken],
        config=Config(),
        plugins=[OtelPlugin(tracer_provider=tracer_provider)],
    )
    events: list[Any] = []

    async def consume() -> None:
        try:
            async for event in agent.stream("go"):
                events.append(event)
        except tether.errors.AuthenticationError:
            events.append("model request failed")

    asyncio.run(consume())
    spans: list[ReadableSpan] = list(exporter.get_finished_spans())
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    assert run.start_time is not None and run.end_time is not None
    completed = any(isinstance(e, Done) and e.result.ok for e in events)
    assert (run.status.status_code is StatusCode.ERROR) is not completed
    children = [s for s in spans if s is not run]
    for span in children:
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
        assert span.start_time is not None and span.end_time is not None
        assert run.start_time <= span.start_time <= span.end_time <= run.end_time

    chats = [s for s in children if s.kind.name == "CLIENT"]
    answered = [c for c in chats if c.status.status_code is not StatusCode.ERROR]
    assert len(answered) == sum(isinstance(e, TurnEnd) for e in events) >= min(len(turns), 1)
    failed = [c for c in chats if c.status.status_code is StatusCode.ERROR]
    assert len(failed) == events.count("model request failed")  # the request that failed
    ends = [e for e in events if isinstance(e, ToolEnd)]
    tools = {
        str((s.attributes or {})["gen_ai.tool.call.id"]): s
        for s in children
        if s.kind.name == "INTERNAL"
    }
    assert sorted(tools) == sorted(e.call_id for e in ends)
    for end in ends:
        span = tools[end.call_id]
        assert span.name == f"execute_tool {end.name}"
        outcome = "error" if end.result.is_error else "ok"
        assert span.attributes is not None
        assert span.attributes["tether.tool.outcome"] == outcome
        assert (span.status.status_code is StatusCode.ERROR) is (outcome == "error")
    tracer_provider.shutdown()
