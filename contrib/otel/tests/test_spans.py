"""Spans and metrics of a scripted run, read back from the SDK's in-memory exporter and
reader: names, GenAI attributes, nesting (a run started by a tool under that tool's
span), retries and compactions as events, trace context inside tool bodies.

Every span test runs twice: with the SDK's in-memory exporter, and through the SDK's
``BatchSpanProcessor`` and OTLP/HTTP exporter to a receiver on loopback whose requests
are decoded with ``opentelemetry-proto`` back into SDK spans. Both must give the same
spans."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import (
    Event,
    ReadableSpan,
    Span,
    SpanLimits,
    SpanProcessor,
    TracerProvider,
)
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import (
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
)
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes

import tether
from tether.config import Config
from tether.events import ToolEnd, ToolProgress, TurnEnd
from tether.messages import Usage
from tether.provider import ModelCapabilities, Pricing
from tether.retry import RetryPolicy
from tether.testing import Reply, ScriptedProvider, call, rate_limited
from tether_otel import OtelPlugin
from tether_testing.http import FakeResponse, FakeServer


async def no_sleep(delay: float) -> None:
    return None


class Telemetry:
    def __init__(
        self,
        capture_content: bool = False,
        path: str = "in_memory",
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = tracer_provider or TracerProvider()
        self.path = path
        self.receiver: FakeServer | None = None
        if path == "otlp":
            self.receiver = FakeServer(lambda r: FakeResponse(status=200, body=b"")).__enter__()
            exporter = OTLPSpanExporter(endpoint=f"{self.receiver.url}/v1/traces", timeout=5)
            self.tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        else:
            self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.plugin = OtelPlugin(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            capture_content=capture_content,
        )

    def finished(self) -> list[ReadableSpan]:
        if self.receiver is None:
            return list(self.spans.get_finished_spans())
        assert self.tracer_provider.force_flush()
        return [span for request in self.receiver.requests for span in decoded(request.body)]

    def close(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        if self.receiver is not None:
            self.receiver.__exit__(None, None, None)

    def metric_points(self) -> dict[str, list[Any]]:
        data = self.metrics.get_metrics_data()
        points: dict[str, list[Any]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points.setdefault(metric.name, []).extend(metric.data.data_points)
        return points


def decoded(body: bytes) -> list[ReadableSpan]:
    """The spans of an OTLP ``ExportTraceServiceRequest``, as SDK spans."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id = int.from_bytes(span.trace_id, "big")
                parent = None
                if span.parent_span_id:
                    remote = bool(span.flags & 0x200)
                    parent = SpanContext(
                        trace_id, int.from_bytes(span.parent_span_id, "big"), remote
                    )
                spans.append(
                    ReadableSpan(
                        name=span.name,
                        context=SpanContext(trace_id, int.from_bytes(span.span_id, "big"), False),
                        parent=parent,
                        attributes=values(span.attributes),
                        events=[
                            Event(e.name, values(e.attributes), e.time_unix_nano)
                            for e in span.events
                        ],
                        kind=SpanKind(span.kind - 1),
                        status=Status(StatusCode(span.status.code), span.status.message or None),
                        start_time=span.start_time_unix_nano,
                        end_time=span.end_time_unix_nano,
                    )
                )
    return spans


def values(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        kind = pair.value.WhichOneof("value")
        value = getattr(pair.value, kind)
        if kind == "array_value":
            value = tuple(getattr(v, v.WhichOneof("value")) for v in value.values)
        out[pair.key] = value
    return out


@pytest.fixture(params=["in_memory", "otlp"])
def path(request: pytest.FixtureRequest) -> str:
    """Where the spans go: the SDK's in-memory exporter, or OTLP/HTTP to loopback."""
    return str(request.param)


@pytest.fixture
def telemetry(path: str) -> Iterator[Telemetry]:
    t = Telemetry(path=path)
    yield t
    t.close()


PRICING = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
USAGE = Usage(input_tokens=1200, output_tokens=40, cache_read_tokens=800, cache_write_tokens=100)
SEEN_HEADERS: list[dict[str, str]] = []


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    headers: dict[str, str] = {}
    propagate.inject(headers)  # what an instrumented HTTP client would send
    SEEN_HEADERS.append(headers)
    return a + b


@tether.tool
def bulky() -> str:
    """Return a long report."""
    return "\n".join(f"row {i}: value {i * 7919 % 10007}" for i in range(300))


def scenario(telemetry: Telemetry) -> tether.Agent:
    """Parallel tools, a retry, a run started by a tool, and a compaction, in one run."""

    @tether.tool
    async def delegate(task: str) -> str:
        """Hand a task to a helper agent."""
        inner = ScriptedProvider([Reply(tool_calls=[call("add", a=10, b=20)]), Reply(text="30")])
        helper = tether.Agent(inner, tools=[add], config=Config(), plugins=[telemetry.plugin])
        return (await helper.run(task)).output

    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a=1, b=2), call("add", a=3, b=4)], usage=USAGE),
            rate_limited(retry_after=0.0),
            Reply(tool_calls=[call("delegate", task="add 10 and 20")], usage=USAGE),
            Reply(tool_calls=[call("bulky")], usage=USAGE),
            Reply(text="All done.", usage=USAGE),
        ],
        capabilities=ModelCapabilities(
            context_window=4000, pricing=PRICING, prompt_caching=True, images_in_tool_results=True
        ),
    )
    return tether.Agent(
        provider,
        tools=[add, delegate, bulky],
        compaction="truncate",
        retry=RetryPolicy(sleep=no_sleep),
        temperature=0.2,
        max_output_tokens=512,
        config=Config(),
        plugins=[telemetry.plugin],
    )


def by_name(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def start_of(span: ReadableSpan) -> int:
    return span.start_time or 0


def parent_of(span: ReadableSpan, spans: list[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next(s for s in spans if s.context.span_id == span.parent.span_id)


async def test_a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children(
    telemetry: Telemetry,
) -> None:
    SEEN_HEADERS.clear()
    result = await scenario(telemetry).run("go")
    assert result.ok and result.retries == 1
    spans = telemetry.finished()
    runs = by_name(spans, "invoke_agent")
    assert len(runs) == 2
    outer = next(s for s in runs if s.parent is None)
    inner = next(s for s in runs if s.parent is not None)
    assert outer.attributes["tether.run.id"] == result.run_id
    assert outer.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert outer.attributes["gen_ai.provider.name"] == "scripted"
    assert outer.attributes["gen_ai.request.model"] == "scripted-model"
    assert outer.attributes["gen_ai.request.temperature"] == 0.2
    assert outer.attributes["tether.run.outcome"] == "completed"
    assert outer.attributes["gen_ai.usage.input_tokens"] == 4 * 1200
    assert outer.attributes["tether.cost.usd"] == pytest.approx(result.cost)
    assert outer.attributes["tether.cache.hit_ratio"] == pytest.approx(800 / 1200)
    assert outer.status.status_code is StatusCode.UNSET

    chats = sorted(
        (s for s in spans if s.name == "chat scripted-model" and parent_of(s, spans) is outer),
        key=lambda s: s.start_time or 0,
    )
    assert len(chats) == 4 and all(s.kind is SpanKind.CLIENT for s in chats)
    first = chats[0]
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.max_tokens"] == 512
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert first.attributes["gen_ai.usage.output_tokens"] == 40
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 800
    assert first.attributes["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert first.attributes["tether.cost.usd"] > 0
    assert chats[-1].attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert chats[-1].attributes["gen_ai.response.time_to_first_chunk"] >= 0
    assert [c.end_time <= n.start_time for c, n in itertools.pairwise(chats)] == [True] * 3

    retried = chats[1]  # the second model call failed once with a rate limit
    assert [e.name for e in retried.events] == ["gen_ai.retry"]
    assert retried.events[0].attributes["error.type"] == "RateLimitError"
    assert retried.attributes["tether.attempts"] == 2
    assert [e.name for e in outer.events] == ["tether.compaction"]
    assert outer.events[0].attributes["tether.compaction.strategy"] == "truncate"

    tools = sorted(
        (s for s in by_name(spans, "execute_tool add") if parent_of(s, spans) is outer),
        key=lambda s: s.start_time or 0,
    )
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == ["call_1", "call_2"]
    assert all(t.attributes["tether.tool.outcome"] == "ok" for t in tools)
    assert all(t.attributes["gen_ai.tool.type"] == "function" for t in tools)
    # parallel: both calls started before either ended
    assert max(t.start_time for t in tools) < min(t.end_time for t in tools)

    (delegate,) = by_name(spans, "execute_tool delegate")
    assert parent_of(inner, spans) is delegate and parent_of(delegate, spans) is outer
    assert inner.attributes["tether.run.parent_id"] == result.run_id
    inner_children = {s.name for s in spans if parent_of(s, spans) is inner}
    assert inner_children == {"chat scripted-model", "execute_tool add"}
    assert {s.context.trace_id for s in spans} == {outer.context.trace_id}

    # Inside a tool body, the current span is that call's execute_tool span.
    traceparents = [h["traceparent"].split("-")[2] for h in SEEN_HEADERS]
    tool_span_ids = {f"{s.context.span_id:016x}" for s in by_name(spans, "execute_tool add")}
    assert len(traceparents) == 3 and set(traceparents) == tool_span_ids


async def test_metrics_count_tokens_durations_tools_and_the_cache(telemetry: Telemetry) -> None:
    await scenario(telemetry).run("go")
    points = telemetry.metric_points()
    tokens = {
        (p.attributes["gen_ai.token.type"], p.attributes.get("gen_ai.response.model")): p.sum
        for p in points["gen_ai.client.token.usage"]
    }
    assert tokens[("input", "scripted-model")] == 4 * 1200 + 2 * 10
    assert tokens[("output", "scripted-model")] == 4 * 40 + 2 * 5
    durations = {
        p.attributes["gen_ai.operation.name"]: p.count
        for p in points["gen_ai.client.operation.duration"]
    }
    assert durations == {"chat": 6, "invoke_agent": 2}
    calls = {p.attributes["gen_ai.tool.name"]: p.value for p in points["tether.tool.calls"]}
    assert calls == {"add": 3, "delegate": 1, "bulky": 1}
    assert "tether.tool.errors" not in points
    (ratio,) = points["tether.cache.hit_ratio"]  # the run and its nested run: 2/3 and 0
    assert (ratio.count, ratio.sum) == (2, pytest.approx(800 / 1200))


async def test_failed_tool_calls_are_error_spans_and_counted(telemetry: Telemetry) -> None:
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("add", a="x", b=1), call("nope")]), Reply(text="sorry")]
    )
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin])
    await agent.run("go")
    spans = telemetry.finished()
    failed = [s for s in spans if s.name.startswith("execute_tool")]
    assert [s.name for s in failed] == ["execute_tool add", "execute_tool nope"]
    assert all(s.status.status_code is StatusCode.ERROR for s in failed)
    assert all(s.attributes["error.type"] == "tool_error" for s in failed)
    errors = {
        p.attributes["gen_ai.tool.name"]: p.value
        for p in telemetry.metric_points()["tether.tool.errors"]
    }
    assert errors == {"add": 1, "nope": 1}


async def test_a_call_cancelled_before_it_ran_is_an_interrupted_span_of_its_duration(
    telemetry: Telemetry,
) -> None:
    token = tether.CancelToken()
    started = asyncio.Event()

    @tether.tool
    async def wait() -> str:
        """Wait until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    async def cancel_when_started() -> None:
        await started.wait()
        token.cancel("stop")

    provider = ScriptedProvider([Reply(tool_calls=[call("wait"), call("add", a=1, b=2)])])
    agent = tether.Agent(
        provider,
        tools=[wait, add],
        config=Config(),
        parallel_tools=False,  # add waits its turn, and never gets it
        plugins=[telemetry.plugin],
    )
    canceller = asyncio.create_task(cancel_when_started())
    events = [event async for event in agent.stream("go", cancel=token)]
    await canceller
    ends = {e.name: e for e in events if isinstance(e, ToolEnd)}
    assert ends["wait"].interrupted and ends["add"].interrupted
    spans = telemetry.finished()
    telemetry.close()
    (ran,) = by_name(spans, "execute_tool wait")
    (unrun,) = by_name(spans, "execute_tool add")
    (run,) = by_name(spans, "invoke_agent")
    for span in (ran, unrun):
        assert span.attributes is not None
        assert span.attributes["tether.tool.outcome"] == "interrupted"
        assert span.status.status_code is StatusCode.ERROR
        assert parent_of(span, spans) is run
    assert unrun.start_time is not None and unrun.end_time is not None
    assert unrun.end_time - unrun.start_time == int(ends["add"].duration * 1e9)
    assert ran.start_time is not None and ran.end_time is not None
    assert ran.start_time <= unrun.start_time <= unrun.end_time <= run.end_time  # type: ignore[operator]


async def test_message_content_is_recorded_only_when_asked(telemetry: Telemetry) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="It is 3.")])
    await tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin]).run(
        "What is 1 + 2?"
    )
    for span in telemetry.finished():
        assert not any(
            key.startswith(
                ("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.tool.call.res")
            )
            for key in span.attributes or {}
        )

    capturing = Telemetry(capture_content=True, path=telemetry.path)
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="It is 3.")])
    await tether.Agent(provider, tools=[add], config=Config(), plugins=[capturing.plugin]).run(
        "What is 1 + 2?"
    )
    spans = capturing.finished()
    capturing.close()
    (run,) = by_name(spans, "invoke_agent")
    assert json.loads(str(run.attributes["gen_ai.input.messages"]))[0]["parts"][0]["content"] == (
        "What is 1 + 2?"
    )
    (tool,) = by_name(spans, "execute_tool add")
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"a": 1, "b": 2}
    assert tool.attributes["gen_ai.tool.call.result"] == "3"
    last_chat = by_name(spans, "chat scripted-model")[-1]
    output = json.loads(str(last_chat.attributes["gen_ai.output.messages"]))
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "It is 3."}],
            "finish_reason": "end_turn",
        }
    ]


async def test_a_run_ending_in_an_exception_ends_its_span_with_an_error(
    telemetry: Telemetry,
) -> None:
    from tether.testing import auth_failed

    agent = tether.Agent(
        ScriptedProvider([auth_failed()]), config=Config(), plugins=[telemetry.plugin]
    )
    with pytest.raises(tether.errors.AuthenticationError):
        await agent.run("hi")
    spans = telemetry.finished()
    (span,) = by_name(spans, "invoke_agent")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "AuthenticationError"
    assert [e.name for e in span.events] == ["exception"]
    # the model request that failed is a chat span of its own, with an error status
    (chat,) = [s for s in spans if s.name.startswith("chat ")]
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "AuthenticationError"
    assert chat.parent is not None and chat.parent.span_id == span.context.span_id


async def test_runs_nest_under_the_applications_current_span(telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    provider = ScriptedProvider([Reply(text="hi")])
    agent = tether.Agent(provider, config=Config(), plugins=[telemetry.plugin])
    with tracer.start_as_current_span("handle request") as request:
        await agent.run("hello")
    spans = telemetry.finished()
    (run,) = by_name(spans, "invoke_agent")
    assert run.parent is not None and run.parent.span_id == request.get_span_context().span_id
    assert (
        trace.get_current_span() is trace.INVALID_SPAN
        or not trace.get_current_span().is_recording()
    )


async def test_a_sub_agent_run_nests_under_the_tool_call_that_started_it(
    telemetry: Telemetry,
) -> None:
    researcher = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("add", a=2, b=2)]), Reply(text="four")]),
        tools=[add],
        config=Config(),
        plugins=[telemetry.plugin],
    )
    writer = tether.Agent(
        ScriptedProvider(
            [Reply(tool_calls=[call("research", task="2 + 2?")]), Reply(text="It is four.")]
        ),
        tools=[researcher.as_tool("research", "Research a question.")],
        config=Config(),
        plugins=[telemetry.plugin],
    )
    result = await writer.run("What is 2 + 2?")
    assert result.ok
    spans = telemetry.finished()
    runs = by_name(spans, "invoke_agent")
    outer = next(s for s in runs if s.attributes["tether.run.id"] == result.run_id)
    (sub,) = [s for s in runs if s is not outer]
    (research,) = by_name(spans, "execute_tool research")
    assert parent_of(research, spans) is outer and parent_of(sub, spans) is research
    assert sub.attributes["tether.run.parent_id"] == result.run_id
    assert {s.name for s in spans if parent_of(s, spans) is sub} == {
        "chat scripted-model",
        "execute_tool add",
    }
    assert research.attributes["tether.tool.outcome"] == "ok"


class CountingIds(RandomIdGenerator):
    """Span ids 1, 2, 3, ... (a subclass of the SDK's default generator, so the writer
    must still ask it)."""

    def __init__(self) -> None:
        self.last = 0

    def generate_span_id(self) -> int:
        self.last += 1
        return self.last


async def test_span_ids_come_from_the_providers_id_generator(path: str) -> None:
    telemetry = Telemetry(path=path, tracer_provider=TracerProvider(id_generator=CountingIds()))
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="3")])
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin])
    await agent.run("go")
    ids = sorted(s.context.span_id for s in telemetry.finished())
    telemetry.close()
    assert ids == [1, 2, 3, 4]  # the run, two chat spans, the tool call


class VendorTracerProvider(trace.TracerProvider):
    """A tracer provider that is not the SDK's (it wraps one, through the API only)."""

    def __init__(self, inner: TracerProvider) -> None:
        self.inner = inner

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return VendorTracer(self.inner.get_tracer(*args, **kwargs))


class VendorTracer(trace.Tracer):
    def __init__(self, inner: trace.Tracer) -> None:
        self.inner = inner

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self.inner.start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.start_as_current_span(*args, **kwargs)


@pytest.mark.parametrize("provider", ["sdk", "vendor"])
async def test_in_a_tool_body_the_current_span_is_the_calls_execute_tool_span(
    provider: str, telemetry: Telemetry
) -> None:
    plugin = telemetry.plugin
    if provider == "vendor":
        plugin = OtelPlugin(tracer_provider=VendorTracerProvider(telemetry.tracer_provider))
    tracer = telemetry.tracer_provider.get_tracer("app")
    seen: list[tuple[trace.Span, bool]] = []

    @tether.tool
    def lookup(key: str) -> str:
        """Look a key up."""
        current = trace.get_current_span()
        seen.append((current, current.is_recording()))
        with tracer.start_as_current_span("app lookup"):
            pass
        return key

    replies = ScriptedProvider([Reply(tool_calls=[call("lookup", key="k")]), Reply(text="k")])
    agent = tether.Agent(replies, tools=[lookup], config=Config(), plugins=[plugin])
    with tracer.start_as_current_span("request") as request:
        await agent.run("go")
        assert trace.get_current_span() is request  # restored after the tool's body
    spans = telemetry.finished()
    (tool,) = by_name(spans, "execute_tool lookup")
    (app,) = by_name(spans, "app lookup")
    ((current, recording),) = seen
    assert recording  # the call's own span, still open in its body
    context = current.get_span_context()
    assert (context.trace_id, context.span_id) == (tool.context.trace_id, tool.context.span_id)
    assert parent_of(app, spans) is tool
    assert tool.status.status_code is StatusCode.UNSET


async def test_a_chat_span_lasts_as_long_as_its_model_call(telemetry: Telemetry) -> None:
    """The span of a model call starts when the call did (its latency before the
    ``TurnEnd``), so a slow call is a long span."""
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a=1, b=2)], pause=0.05),
            Reply(text="three", chunk=1, pause=0.01),
        ]
    )
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin])
    turns = [e async for e in agent.stream("go") if isinstance(e, TurnEnd)]
    chats = sorted(by_name(telemetry.finished(), "chat scripted-model"), key=start_of)
    assert len(chats) == len(turns) == 2
    for span, turn in zip(chats, turns, strict=True):
        assert span.start_time is not None and span.end_time is not None
        duration_ns = span.end_time - span.start_time
        assert abs(duration_ns - turn.latency * 1e9) <= 1_000
        assert duration_ns >= 0.05e9  # each call streamed for at least 50 ms
    assert chats[0].end_time <= chats[1].start_time  # type: ignore[operator]


async def test_tool_calls_a_run_abandoned_are_ended_as_interrupted(
    telemetry: Telemetry,
) -> None:
    """A consumer that stops reading mid-tool abandons the run: the call's span still
    ends (an error, interrupted) with the run's, and is counted."""

    @tether.tool
    async def wait(context: tether.ToolContext) -> str:
        """Wait forever."""
        assert context.report_progress is not None
        context.report_progress(0.0, None, "waiting")
        await asyncio.Event().wait()
        return "never"

    provider = ScriptedProvider([Reply(tool_calls=[call("wait")]), Reply(text="unreached")])
    agent = tether.Agent(provider, tools=[wait], config=Config(), plugins=[telemetry.plugin])
    stream = agent.stream("go")
    async for event in stream:
        if isinstance(event, ToolProgress):  # the body runs
            break
    await stream.aclose()
    spans = telemetry.finished()
    (run,) = by_name(spans, "invoke_agent")
    (tool,) = by_name(spans, "execute_tool wait")
    assert parent_of(tool, spans) is run
    assert tool.attributes is not None
    assert tool.attributes["tether.tool.outcome"] == "interrupted"
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.end_time is not None and tool.end_time <= run.end_time  # type: ignore[operator]
    assert run.status.status_code is StatusCode.ERROR
    errors = telemetry.metric_points()["tether.tool.errors"]
    assert [(p.attributes["gen_ai.tool.name"], p.value) for p in errors] == [("wait", 1)]


async def test_an_observer_callback_that_raises_is_logged_and_the_run_goes_on(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    observer = telemetry.plugin.observer
    broken = {"first": True}
    turn_end = observer._handlers[TurnEnd]

    def fails_once(run: Any, event: Any, now: int) -> None:
        if broken.pop("first", False):
            raise RuntimeError("boom")
        turn_end(run, event, now)

    observer._handlers[TurnEnd] = fails_once
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="3")])
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin])
    with caplog.at_level(logging.ERROR, logger="tether.observers"):
        assert (await agent.run("go")).ok
    assert "raised" in caplog.text and "boom" in caplog.text
    names = sorted(s.name for s in telemetry.finished())
    assert names == ["chat scripted-model", "execute_tool add", "invoke_agent"]  # one lost


class DropToolSpans(Sampler):
    """Samples everything but ``execute_tool`` spans, and notes every span it is asked
    about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        self.asked.append(name)
        if name.startswith("execute_tool"):
            return SamplingResult(Decision.DROP)
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "DropToolSpans"


class Starts(SpanProcessor):
    """A span processor of the application's, noting the spans it saw start."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started.append(span.name)


async def test_the_applications_sampler_limits_and_processors_apply_to_every_span(
    path: str,
) -> None:
    sampler = DropToolSpans()
    starts = Starts()
    tracer_provider = TracerProvider(sampler=sampler, span_limits=SpanLimits(max_attributes=3))
    tracer_provider.add_span_processor(starts)
    telemetry = Telemetry(path=path, tracer_provider=tracer_provider)
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="3")])
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin])
    assert (await agent.run("go")).ok
    spans = telemetry.finished()
    telemetry.close()
    expected = ["invoke_agent", "chat scripted-model", "execute_tool add", "chat scripted-model"]
    assert sampler.asked == expected  # child spans consult the sampler too
    assert starts.started == ["invoke_agent", "chat scripted-model", "chat scripted-model"]
    assert sorted(s.name for s in spans) == ["chat scripted-model"] * 2 + ["invoke_agent"]
    assert all(len(s.attributes or {}) <= 3 for s in spans)  # the span limits hold


async def test_a_parent_based_sampler_that_drops_the_run_drops_all_its_spans(path: str) -> None:
    class DropAll(DropToolSpans):
        def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
            return SamplingResult(Decision.DROP)

    telemetry = Telemetry(path=path, tracer_provider=TracerProvider(sampler=ParentBased(DropAll())))
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="3")])
    agent = tether.Agent(provider, tools=[add], config=Config(), plugins=[telemetry.plugin])
    assert (await agent.run("go")).ok
    assert telemetry.finished() == []
    telemetry.close()
