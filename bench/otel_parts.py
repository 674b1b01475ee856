"""Where tracing's CPU goes: each part of tether-otel's work, and the SDK's own ways of
doing it, timed alone on the spans of the A benchmark of ``overhead.py``.

Per span: starting and ending a span through the SDK's tracer (no processor, and with a
batch processor that never exports), tether-otel's span writer (a model call's span
written in one step, a tool call's span opened and ended) handing span objects to a batch
processor, the same writer encoding each span as it ends for what ``[observers.otel]``
builds (``OtlpBatchSpanProcessor``: the figure includes the encoding), and encoding a batch of 512
such spans for OTLP with the SDK's encoder and with tether-otel's. Per metric value:
``Histogram.record`` of the SDK, and tether-otel's queueing of a value (recorded later,
at collection). Each figure is the median over rounds of CPU µs per operation; the parts
take turns within every round.

Run: ``python bench/otel_parts.py`` (progress on stderr, one JSON line on stdout).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from tether_otel.batch import OtlpBatchSpanProcessor
from tether_otel.instruments import Instruments
from tether_otel.otlp import Encoder, OTLPSpanExporter
from tether_otel.spans import SdkSpanWriter, writer_for

BASE = {"gen_ai.provider.name": "scripted", "gen_ai.request.model": "scripted-model"}


def chat_attributes(i: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        **BASE,
        "gen_ai.response.model": "scripted-model",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.usage.input_tokens": 40 + 12 * i,
        "gen_ai.usage.output_tokens": 10,
    }


def tool_attributes(i: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": f"c{i}",
        "gen_ai.tool.type": "function",
    }


class Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class Keep:
    """A span processor holding finished spans (to encode them afterwards)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def never_exporting() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(Discard(), max_queue_size=1 << 20, schedule_delay_millis=1e9)
    )
    return provider


def parts(n: int) -> dict[str, Callable[[], float]]:
    """Each part: a function timing ``n`` operations, returning CPU µs per operation."""
    bare = TracerProvider().get_tracer("bench")
    batched_provider = never_exporting()
    batched = batched_provider.get_tracer("bench")
    writer = writer_for(never_exporting(), "0")
    assert isinstance(writer, SdkSpanWriter)
    root = writer.open(writer.template("invoke_agent", SpanKind.INTERNAL, None), {})
    parent = trace.set_span_in_context(trace.NonRecordingSpan(root.context))
    chat_template = writer.template("chat scripted-model", SpanKind.CLIENT, root.context)
    tool_template = writer.template("execute_tool add", SpanKind.INTERNAL, root.context)
    keeper = writer_for(TracerProvider(), "0")
    assert isinstance(keeper, SdkSpanWriter)
    kept = keeper.processor = Keep()
    kept_chat = keeper.template("chat scripted-model", SpanKind.CLIENT, root.context)
    kept_tool = keeper.template("execute_tool add", SpanKind.INTERNAL, root.context)
    for i in range(256):
        keeper.record(kept_chat, chat_attributes(i), 1, 2)
        tool = keeper.open(kept_tool, tool_attributes(i))
        tool.attributes["tether.tool.outcome"] = "ok"
        tool.end()
    batch = kept.spans
    encoder = Encoder()
    histogram = Instruments.create(MeterProvider(metric_readers=[InMemoryMetricReader()]), "0")
    labels = {"gen_ai.operation.name": "chat", **BASE, "gen_ai.token.type": "input"}

    def timed(body: Callable[[], None], operations: int) -> Callable[[], float]:
        def run() -> float:
            gc.collect()
            start = time.process_time()
            body()
            return (time.process_time() - start) / operations * 1e6

        return run

    def sdk_spans(tracer: trace.Tracer) -> Callable[[], None]:
        def body() -> None:
            for i in range(n):
                tracer.start_span(
                    "chat scripted-model", parent, SpanKind.CLIENT, chat_attributes(i)
                ).end()
                tracer.start_span(
                    "execute_tool add", parent, SpanKind.INTERNAL, tool_attributes(i)
                ).end()
            if tracer is batched:
                batched_provider._active_span_processor._span_processors[
                    0
                ]._batch_processor._queue.clear()  # type: ignore[attr-defined]

        return body

    def tether_spans() -> None:
        for i in range(n):
            writer.record(chat_template, chat_attributes(i), 1, 2)
            span = writer.open(tool_template, tool_attributes(i))
            span.attributes["tether.tool.outcome"] = "ok"
            span.end()
        writer.processor._span_processors[0]._batch_processor._queue.clear()

    direct_provider = TracerProvider()
    direct_processor = OtlpBatchSpanProcessor(
        OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces"),
        max_queue_size=1 << 20,
        max_export_batch_size=1 << 20,
        schedule_delay_millis=1 << 30,
    )
    direct_provider.add_span_processor(direct_processor)
    direct = writer_for(direct_provider, "0")
    run = direct.open(direct.template("invoke_agent", SpanKind.INTERNAL, None), {})
    chat_fixed = {
        "gen_ai.operation.name": "chat",
        **BASE,
        "gen_ai.response.model": "scripted-model",
    }
    tool_fixed = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.type": "function",
    }
    direct_chat = direct.template("chat scripted-model", SpanKind.CLIENT, run, chat_fixed)
    direct_tool = direct.template("execute_tool add", SpanKind.INTERNAL, run, tool_fixed)

    def tether_direct_spans() -> None:
        """As the observer writes them to what ``[observers.otel]`` builds: queued as span
        records (encoded where they are exported: the export process)."""
        for i in range(n):
            direct.record(
                direct_chat,
                {
                    "gen_ai.response.finish_reasons": ("tool_use",),
                    "gen_ai.usage.input_tokens": 40 + 12 * i,
                    "gen_ai.usage.output_tokens": 10,
                },
                1,
                2,
            )
            span = direct.open(direct_tool, {"gen_ai.tool.call.id": f"c{i}"})
            span.attributes["tether.tool.outcome"] = "ok"
            span.end()
        direct.flush()  # a batch's records go to the processor together
        direct_processor._queue.clear()

    def sdk_encode() -> None:
        for _ in range(n // 256):
            sdk_encode_spans(batch).SerializePartialToString()

    def tether_encode() -> None:
        for _ in range(n // 256):
            encoder.request(batch)

    def sdk_record() -> None:
        record = histogram.token_usage.record
        for i in range(n):
            record(i, labels)

    def tether_record() -> None:
        for i in range(n):
            histogram.record(histogram.token_usage, i, labels)
        histogram._pending.clear()

    return {
        "sdk_tracer_span_us": timed(sdk_spans(bare), 2 * n),
        "sdk_tracer_span_batched_us": timed(sdk_spans(batched), 2 * n),
        "tether_writer_span_batched_us": timed(tether_spans, 2 * n),
        "tether_writer_span_record_us": timed(tether_direct_spans, 2 * n),
        "sdk_encode_span_us": timed(sdk_encode, 2 * (n // 256) * 256),
        "tether_encode_span_us": timed(tether_encode, 2 * (n // 256) * 256),
        "sdk_histogram_record_us": timed(sdk_record, n),
        "tether_histogram_queue_us": timed(tether_record, n),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--n", type=int, default=2048, help="operations per timing")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 1)
    timers = parts(args.n)
    samples: dict[str, list[float]] = {name: [] for name in timers}
    names = list(timers)
    for i in range(args.rounds + 1):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            value = timers[name]()
            if i:  # the first round warms up
                samples[name].append(value)
    out: dict[str, object] = {
        name: round(statistics.median(values), 2) for name, values in samples.items()
    }
    out.update(
        rounds=args.rounds,
        load_average_1m_before=load_before,
        load_average_1m=round(os.getloadavg()[0], 1),
    )
    for name in names:
        print(f"[otel parts] {name}: {out[name]}", file=sys.stderr)
    print(json.dumps({"benchmark": "otel_parts", **out}), flush=True)


if __name__ == "__main__":
    main()
