"""``OtlpBatchSpanProcessor`` (what ``[observers.otel]`` builds) exports like the SDK's
batch processor: the same request bytes as the SDK's encoder for any span of the
provider, in batches by size and by time, dropping beyond its queue with a warning,
skipping unsampled spans, flushing what is left on shutdown, and reading ``OTEL_BSP_*``."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as SdkOTLPSpanExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether.testing.http import FakeResponse, FakeServer
from tether_otel import OtelPlugin
from tether_otel.batch import OtlpBatchSpanProcessor
from tether_otel.otlp import OTLPSpanExporter


@pytest.fixture
def receiver() -> Iterator[FakeServer]:
    with FakeServer(lambda r: FakeResponse(status=200, body=b"")) as server:
        yield server


def exporter(receiver: FakeServer) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", timeout=5)


def span_counts(receiver: FakeServer) -> list[int]:
    counts = []
    for request in receiver.requests:
        message = ExportTraceServiceRequest()
        message.ParseFromString(request.body)
        counts.append(sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans))
    return counts


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_spans_of_other_instrumentation_are_sent_as_the_sdk_encodes_them(
    receiver: FakeServer,
) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "billing"}))
    processor = OtlpBatchSpanProcessor(exporter(receiver))
    provider.add_span_processor(processor)
    seen = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(seen))  # what the SDK would export
    app, library = provider.get_tracer("app", "2.0"), provider.get_tracer("lib")
    with app.start_as_current_span("request", attributes={"user": "ann", "n": 3}) as root:
        root.add_event("parsed", {"bytes": 120})
        library.start_span("query", attributes={"huge": 2**64 - 1}).end()  # left to the SDK
        app.start_span("render", attributes={"ratio": 0.5, "tags": ("a", "b")}).end()
    assert processor.force_flush()
    (request,) = receiver.requests
    assert request.body == sdk_encode_spans(seen.get_finished_spans()).SerializePartialToString()
    provider.shutdown()


async def test_tether_spans_and_an_applications_spans_share_one_request(
    receiver: FakeServer,
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(OtlpBatchSpanProcessor(exporter(receiver)))
    agent = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="3")]),
        tools=[add],
        config=Config(),
        plugins=[OtelPlugin(tracer_provider=provider)],
    )
    with provider.get_tracer("app").start_as_current_span("handle request"):
        await agent.run("add 1 and 2")
    assert provider.force_flush()
    (request,) = receiver.requests
    message = ExportTraceServiceRequest()
    message.ParseFromString(request.body)
    (resource_spans,) = message.resource_spans
    scopes = {s.scope.name: [span.name for span in s.spans] for s in resource_spans.scope_spans}
    assert scopes == {
        "tether_otel": [
            "chat scripted-model",
            "execute_tool add",
            "chat scripted-model",
            "invoke_agent",
        ],
        "app": ["handle request"],
    }
    (app_span,) = resource_spans.scope_spans[1].spans
    run = resource_spans.scope_spans[0].spans[-1]
    assert run.parent_span_id == app_span.span_id and run.trace_id == app_span.trace_id
    provider.shutdown()


def test_a_full_batch_is_sent_without_waiting_and_the_rest_on_schedule(
    receiver: FakeServer,
) -> None:
    provider = TracerProvider()
    processor = OtlpBatchSpanProcessor(
        exporter(receiver), max_export_batch_size=3, schedule_delay_millis=300
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("app")
    for i in range(7):
        tracer.start_span(f"step {i}").end()
    deadline = time.monotonic() + 5
    while sum(span_counts(receiver)) < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    counts = span_counts(receiver)
    assert sum(counts) == 7 and max(counts) <= 3  # no flush was asked for
    provider.shutdown()


def test_spans_beyond_the_queue_are_dropped_with_a_warning(
    receiver: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider()
    processor = OtlpBatchSpanProcessor(
        exporter(receiver),
        max_queue_size=4,
        max_export_batch_size=4,
        schedule_delay_millis=60_000,
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("app")
    with processor._export_lock, caplog.at_level(logging.WARNING, logger="tether_otel.batch"):
        for i in range(6):  # the worker, woken at 4, cannot take them meanwhile
            tracer.start_span(f"step {i}").end()
    assert processor.dropped == 2
    assert "OTEL_BSP_MAX_QUEUE_SIZE" in caplog.text
    assert processor.force_flush()
    assert span_counts(receiver) == [4]
    provider.shutdown()


async def test_unsampled_spans_are_not_sent(receiver: FakeServer) -> None:
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(OtlpBatchSpanProcessor(exporter(receiver)))
    provider.get_tracer("app").start_span("ignored").end()
    agent = tether.Agent(
        ScriptedProvider([Reply(text="hi")]),
        config=Config(),
        plugins=[OtelPlugin(tracer_provider=provider)],
    )
    assert (await agent.run("hi")).ok
    assert provider.force_flush()
    assert receiver.requests == []
    provider.shutdown()


def test_shutdown_sends_what_is_waiting_and_then_nothing_more(receiver: FakeServer) -> None:
    provider = TracerProvider()
    processor = OtlpBatchSpanProcessor(exporter(receiver), schedule_delay_millis=60_000)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("app")
    tracer.start_span("before").end()
    provider.shutdown()
    assert span_counts(receiver) == [1]
    assert not processor._worker.is_alive()
    tracer.start_span("after").end()
    assert not processor.force_flush()
    assert span_counts(receiver) == [1]


def test_settings_come_from_the_otel_bsp_variables(
    receiver: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "250")
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16")
    processor = OtlpBatchSpanProcessor(exporter(receiver))
    assert (processor.schedule_delay, processor.max_queue_size) == (0.25, 64)
    assert processor.max_export_batch_size == 16
    processor.shutdown()
    with pytest.raises(ValueError, match="max_export_batch_size"):
        OtlpBatchSpanProcessor(exporter(receiver), max_queue_size=8, max_export_batch_size=9)
    with pytest.raises(TypeError, match="BatchSpanProcessor"):
        OtlpBatchSpanProcessor(SdkOTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces"))  # type: ignore[arg-type]


def test_the_export_itself_is_not_traced_by_instrumented_clients(receiver: FakeServer) -> None:
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, get_value

    suppressed: list[object] = []

    class Watching(OTLPSpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            suppressed.append(get_value(_SUPPRESS_INSTRUMENTATION_KEY))
            return super().export(spans)

    provider = TracerProvider()
    provider.add_span_processor(
        OtlpBatchSpanProcessor(Watching(endpoint=f"{receiver.url}/v1/traces", timeout=5))
    )
    provider.get_tracer("app").start_span("work").end()
    provider.shutdown()
    assert suppressed == [True] and span_counts(receiver) == [1]


def test_a_forked_child_starts_with_an_empty_queue_and_its_own_export_thread(
    receiver: FakeServer,
) -> None:
    import os

    provider = TracerProvider()
    processor = OtlpBatchSpanProcessor(exporter(receiver), schedule_delay_millis=60_000)
    provider.add_span_processor(processor)
    provider.get_tracer("app").start_span("parent's").end()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running anything else
        try:
            before = len(processor._queue)
            provider.get_tracer("app").start_span("child's").end()
            state = f"{before} {int(processor._worker.is_alive())} {len(processor._queue)}"
            os.write(write, state.encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as reading:
        assert reading.read() == "0 1 1"  # none of the parent's, a live worker, its own
    provider.shutdown()
    assert span_counts(receiver) == [1]  # the parent sends only its own


def test_a_bulk_of_spans_beyond_the_queue_drops_its_newest_with_one_warning(
    receiver: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    processor = OtlpBatchSpanProcessor(
        exporter(receiver), max_queue_size=4, max_export_batch_size=4, schedule_delay_millis=60_000
    )
    group = processor.group(Resource.create({}), None)
    records = [(1, 0, False, f"step {i}", 1, None, i + 1, 10, 20, {}, (), None) for i in range(6)]
    with processor._export_lock, caplog.at_level(logging.WARNING, logger="tether_otel.batch"):
        processor.extend_to(group, records)
    assert processor.dropped == 2
    assert caplog.text.count("OTEL_BSP_MAX_QUEUE_SIZE") == 1
    assert processor.force_flush()
    request = ExportTraceServiceRequest()
    request.ParseFromString(receiver.requests[0].body)
    names = [s.name for s in request.resource_spans[0].scope_spans[0].spans]
    assert names == ["step 0", "step 1", "step 2", "step 3"]  # the first four, in order
    processor.shutdown()
