"""tether-otel's OTLP span encoder writes the same ``ExportTraceServiceRequest`` as the
SDK's encoder, for tether's spans and for any other span the provider exports (every
attribute type, events, links, status, remote parents, trace state, dropped counts,
several resources and scopes); its exporter sends that over HTTP like the SDK's."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

import tether
from tether.config import Config
from tether.retry import RetryPolicy
from tether.testing import Reply, ScriptedProvider, call, rate_limited
from tether.testing.http import FakeResponse, FakeServer
from tether_otel import OtelPlugin
from tether_otel.otlp import Encoder, OTLPSpanExporter, Unsupported, encode_spans


def parsed(body: bytes) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    message.ParseFromString(body)
    return message


def assert_same_as_sdk(spans: Sequence[ReadableSpan]) -> None:
    expected = sdk_encode_spans(spans).SerializePartialToString()
    actual = Encoder().request(spans)  # the fast path itself, never the fallback
    assert parsed(actual) == parsed(expected)
    assert actual == expected  # same bytes, too: fields in the SDK's order


def collect(provider: TracerProvider) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


async def no_sleep(delay: float) -> None:
    return None


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_the_spans_of_a_run_encode_as_the_sdk_encodes_them() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "billing-agent"}))
    finished = collect(provider)
    plugin = OtelPlugin(tracer_provider=provider, capture_content=True)
    model = ScriptedProvider(
        [
            rate_limited(retry_after=0.0),
            Reply(tool_calls=[call("add", a=2, b=3), call("nope")]),
            Reply(text="5 — done"),
        ]
    )
    agent = tether.Agent(
        model, tools=[add], retry=RetryPolicy(sleep=no_sleep), config=Config(), plugins=[plugin]
    )
    result = await agent.run("go")
    assert result.ok
    spans = finished.get_finished_spans()
    assert len(spans) == 5  # the run, two chats, two tool calls (one failed)
    assert any(span.events for span in spans)  # the retry
    assert_same_as_sdk(spans)
    assert_same_as_sdk(spans[:1])


def test_every_kind_of_span_encodes_as_the_sdk_encodes_it() -> None:
    limits = SpanLimits(max_attributes=12, max_events=2, max_links=1)
    first = TracerProvider(
        resource=Resource({"service.name": "a", "n": 3}, schema_url="https://example.com/r"),
        span_limits=limits,
    )
    second = TracerProvider(resource=Resource({}))
    finished = collect(first)
    finished_second = collect(second)
    remote = SpanContext(
        0x1234,
        0x5678,
        True,
        TraceFlags(TraceFlags.SAMPLED),
        TraceState([("vendor", "x1"), ("other", "y")]),
    )
    tracer = first.get_tracer("lib", "1.0", schema_url="https://example.com/s")
    attributes = {
        "str": "é ✓",
        "empty": "",
        "true": True,
        "false": False,
        "zero": 0,
        "big": 2**62,
        "negative": -7,
        "float": 0.25,
        "neg_float": -1e300,
        "strs": ("a", "b"),
        "ints": [1, -2, 300],
        "floats": (0.5,),
        "bools": (True, False),
    }
    with tracer.start_as_current_span(
        "root", kind=SpanKind.SERVER, context=set_span_in_context(NonRecordingSpan(remote))
    ) as root:
        root.set_attributes(attributes)  # one more than the limit: a dropped count
        for i in range(3):  # one event more than the limit
            root.add_event(f"event {i}", {"i": i, "name": "é"}, timestamp=1000 + i)
        root.set_status(Status(StatusCode.ERROR, "it broke"))
        with tracer.start_as_current_span(
            "child",
            kind=SpanKind.CLIENT,
            links=[Link(remote, {"why": "because"}), Link(root.get_span_context())],
        ) as child:
            child.set_status(Status(StatusCode.OK))
    other = first.get_tracer("other-lib")
    for kind in (SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL):
        other.start_span("", kind=kind, start_time=5).end(end_time=6)
    second.get_tracer("third").start_span("elsewhere").end()
    spans = [*finished.get_finished_spans(), *finished_second.get_finished_spans()]
    spans.insert(2, finished_second.get_finished_spans()[0])  # resources interleaved
    root_span, child_span = (next(s for s in spans if s.name == n) for n in ("root", "child"))
    assert root_span.dropped_attributes and root_span.dropped_events
    assert child_span.dropped_links
    assert root_span.parent is not None and root_span.parent.is_remote
    assert_same_as_sdk(spans)
    assert_same_as_sdk([])


def test_values_the_fast_path_leaves_to_the_sdk_encode_as_the_sdk_encodes_them() -> None:
    provider = TracerProvider()
    finished = collect(provider)
    tracer = provider.get_tracer("lib")
    span = tracer.start_span("huge")
    span._attributes._dict["huge"] = 2**64  # type: ignore[attr-defined]  # beyond int64
    span.end()
    tracer.start_span("mapping", attributes={"fine": 1}).end()
    spans = finished.get_finished_spans()
    spans[1]._attributes._dict["nested"] = {"k": [1, "v"]}  # type: ignore[attr-defined]
    assert_same_as_sdk(spans[1:])
    with pytest.raises(Unsupported):
        Encoder().request(spans)
    expected = sdk_encode_spans(spans).SerializePartialToString()
    assert encode_spans(spans) == expected


@pytest.mark.parametrize("response_status", [200, 400])
def test_the_exporter_posts_the_encoded_spans_like_the_sdk_exporter(response_status: int) -> None:
    provider = TracerProvider()
    finished = collect(provider)
    with provider.get_tracer("lib").start_as_current_span("root"):
        provider.get_tracer("lib").start_span("child", attributes={"k": "v"}).end()
    spans = finished.get_finished_spans()
    with FakeServer(lambda r: FakeResponse(status=response_status, body=b"")) as receiver:
        exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", timeout=3)
        outcome = exporter.export(spans)
        exporter.shutdown()
    assert OTLPSpanExporter._fast is not None  # this SDK version takes the fast path
    expected = SpanExportResult.SUCCESS if response_status == 200 else SpanExportResult.FAILURE
    assert outcome is expected
    (request,) = receiver.requests
    assert request.path == "/v1/traces"
    assert request.headers["content-type"] == "application/x-protobuf"
    assert request.body == sdk_encode_spans(spans).SerializePartialToString()
