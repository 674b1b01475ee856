"""Cost of tracing on the A benchmark of ``overhead.py``, measured in the same run.

The same scripted run (the model calls ``add`` 50 times, one call per response, then
answers; 51 model round trips) is timed four ways: without tether-otel; with its spans
going to an SDK tracer provider whose batch processor exports over OTLP/HTTP to a
receiver on loopback through tether-otel's exporter (what ``[observers.otel]`` builds);
the same with the metrics recorded as well; and, for reference, spans through the SDK's
own ``OTLPSpanExporter``. The receiver runs in a child process, as a collector would, so
only the exporting side's CPU is counted.

Each sample is a block of runs: its wall time (the batch processor exports on its own
thread meanwhile, as in production), and the process's CPU time for the runs plus a
flush of the exporter and a collection of the metrics at the end of the block, so the
export's own work (encoding, sending) is counted. Each round runs one block of every
agent, in a rotating order; an overhead is the median over the rounds of the ratio to
the plain agent's block of the same round, so that drift of a shared machine cancels
out. The run log is off in all of them, so the ratios are telemetry alone.

With ``--breakdown``, two more agents split the cost of the spans: tether-otel with a
batch processor whose exporter discards the spans (no encoding, no sending), and with a
tracer provider that has no span processor at all.

Run: ``python bench/otel_overhead.py`` (progress on stderr, one JSON line on stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

os.environ["TETHER_RUN_LOG"] = "off"

from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as SdkOTLPSpanExporter,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from overhead import A_TOOL_CALLS, add, tool_script

import tether
from tether.config import Config
from tether.testing import ScriptedProvider
from tether.testing.http import FakeResponse, FakeServer
from tether_otel import OtelPlugin
from tether_otel.batch import OtlpBatchSpanProcessor
from tether_otel.otlp import OTLPSpanExporter


def make_agent(plugins: list[object]) -> tuple[tether.Agent, ScriptedProvider]:
    provider = ScriptedProvider()
    provider.record_requests = False
    agent = tether.Agent(
        provider,
        tools=[add],
        system="You add numbers.",
        config=Config(),
        limits={"max_turns": 10_000},
        plugins=plugins,
    )
    return agent, provider


async def one_run(agent: tether.Agent, provider: ScriptedProvider) -> float:
    provider.reset(tool_script(A_TOOL_CALLS))
    t0 = time.perf_counter()
    result = await agent.run("go")
    elapsed = time.perf_counter() - t0
    assert result.ok and result.tool_calls == A_TOOL_CALLS
    return elapsed


class Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def measure(
    reps: int, block: int, receiver_url: str, breakdown: bool = False
) -> dict[str, object]:
    load_before = round(os.getloadavg()[0], 1)
    flushers: dict[str, list[Any]] = {"plain": []}
    providers: list[Any] = []

    def traced(
        metrics: bool,
        name: str,
        exporter_class: type | None = OTLPSpanExporter,
        sdk_batch: bool = False,
    ) -> tuple[tether.Agent, ScriptedProvider]:
        tracer_provider = TracerProvider()
        if exporter_class is Discard:
            tracer_provider.add_span_processor(BatchSpanProcessor(Discard()))
        elif exporter_class is OTLPSpanExporter and not sdk_batch:  # what the config builds
            exporter = exporter_class(endpoint=f"{receiver_url}/v1/traces")
            tracer_provider.add_span_processor(OtlpBatchSpanProcessor(exporter))
        elif exporter_class is not None:
            exporter = exporter_class(endpoint=f"{receiver_url}/v1/traces")
            tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()]) if metrics else None
        flushers[name] = [p for p in (tracer_provider, meter_provider) if p is not None]
        providers.extend(flushers[name])
        plugin = OtelPlugin(
            tracer_provider=tracer_provider, meter_provider=meter_provider, name=name
        )
        return make_agent([plugin])

    agents = {
        "plain": make_agent([]),
        "traced": traced(False, "traced"),
        "traced_and_metrics": traced(True, "traced_and_metrics"),
        "traced_sdk_exporter": traced(False, "traced_sdk_exporter", SdkOTLPSpanExporter),
    }
    if breakdown:  # the SDK's batch processor (queueing span objects) with tether's exporter
        agents["traced_sdk_batch"] = traced(False, "traced_sdk_batch", sdk_batch=True)
    if breakdown:  # the spans' share without export, and without any span processor
        agents["spans_discarded"] = traced(False, "spans_discarded", Discard)
        agents["spans_no_processor"] = traced(False, "spans_no_processor", None)

    async def one_block(name: str) -> tuple[float, float]:
        """Wall seconds of ``block`` runs (the exporter works in the background, as it
        does in production), and the process's CPU seconds for them and the export of
        their spans and metrics (flushed and collected at the end of the block: encoding
        and sending included)."""
        gc.collect()
        walls = 0.0
        cpu0 = time.process_time()
        for _ in range(block):
            walls += await one_run(*agents[name])
        for provider in flushers[name]:
            provider.force_flush()
        return walls, time.process_time() - cpu0

    for name in agents:  # warm-up
        await one_block(name)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in agents}
    names = list(agents)
    for i in range(reps):
        for name in names[i % len(names) :] + names[: i % len(names)]:  # rotate the order
            samples[name].append(await one_block(name))
    for provider in providers:
        provider.shutdown()
    per_rt = block * (A_TOOL_CALLS + 1) / 1e6
    wall = {n: statistics.median(w for w, _ in s) / per_rt for n, s in samples.items()}
    cpu = {n: statistics.median(c for _, c in s) / per_rt for n, s in samples.items()}
    out: dict[str, object] = {}
    for name in agents:
        out[f"a_us_per_rt_{name}"] = round(wall[name], 1)
        out[f"a_cpu_us_per_rt_{name}"] = round(cpu[name], 1)
    plain = samples["plain"]
    for name in names[1:]:
        # the median of the ratios within each round: the blocks of a round ran back to
        # back, so a load change between rounds cancels out
        pairs = list(zip(samples[name], plain, strict=True))
        out[f"{name}_overhead"] = round(statistics.median(t[0] / p[0] for t, p in pairs) - 1, 3)
        out[f"{name}_cpu_overhead"] = round(statistics.median(t[1] / p[1] for t, p in pairs) - 1, 3)
    out.update(
        spans_per_run=2 * A_TOOL_CALLS + 2,
        reps=reps,
        runs_per_block=block,
        load_average_1m=round(os.getloadavg()[0], 1),
        load_average_1m_before=load_before,
    )
    return out


def serve_receiver() -> None:
    """The OTLP receiver, in its own process (as a collector is): prints its URL, answers
    200 to everything until stdin closes, then prints how many span exports it got."""
    with FakeServer(lambda r: FakeResponse(status=200, body=b"")) as receiver:
        print(receiver.url, flush=True)
        sys.stdin.read()
        print(sum(1 for r in receiver.requests if r.path == "/v1/traces"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--block", type=int, default=5, help="runs per timed block")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also spans handed to a batch processor that discards them, and to no processor",
    )
    parser.add_argument("--receiver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receiver:
        serve_receiver()
        return
    receiver = subprocess.Popen(
        [sys.executable, __file__, "--receiver"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert receiver.stdout is not None
        url = receiver.stdout.readline().strip()
        if not url:
            raise SystemExit("the OTLP receiver did not start")
        out = asyncio.run(measure(args.reps, args.block, url, args.breakdown))
        exported, _ = receiver.communicate(timeout=60)
    finally:
        receiver.kill()
    out["otlp_requests"] = int(exported)
    print(
        f"[tether-otel] A: {out['a_us_per_rt_plain']} us/RT plain, "
        f"{out['a_us_per_rt_traced']} traced ({out['traced_overhead']:+.1%}, "
        f"CPU {out['traced_cpu_overhead']:+.1%}), "
        f"{out['a_us_per_rt_traced_and_metrics']} with metrics too "
        f"({out['traced_and_metrics_overhead']:+.1%}, CPU {out['traced_and_metrics_cpu_overhead']:+.1%}); "
        f"spans through the SDK's exporter {out['a_us_per_rt_traced_sdk_exporter']} "
        f"({out['traced_sdk_exporter_overhead']:+.1%}, CPU {out['traced_sdk_exporter_cpu_overhead']:+.1%})",
        file=sys.stderr,
    )
    print(json.dumps({"benchmark": "otel_overhead", **out}), flush=True)


if __name__ == "__main__":
    main()
