"""Cost of tracing on the A benchmark of ``overhead.py``, measured in the same run.

The same scripted run (the model calls ``add`` 50 times, one call per response, then
answers; 51 model round trips) is timed five ways: without tether-otel; with its spans
going to an SDK tracer provider whose batch processor hands them to an export process
that sends them over OTLP/HTTP to a receiver on loopback (what ``[observers.otel]``
builds); the same with the metrics recorded as well; the same spans exported from the
batch processor's thread (``export_process = false``); and, for reference, spans through
the SDK's own ``OTLPSpanExporter``. The receiver runs in a child process, as a collector
would.

Each sample is a block of runs followed by a flush of the spans and a collection of the
metrics: its wall time, the flush included, so that work a processor puts off until later
is counted all the same (with an export process, until the spans are written to it: this
process waits for nothing more), and the CPU time of this process over the same span.
Each round
runs one block of every agent, in a rotating order; an overhead is the median over the
rounds of the ratio to the plain agent's block of the same round, so that drift of a
shared machine cancels out. The run log is off in all of them, so the ratios are
telemetry alone. The export process's own CPU time after the warm-up (its start-up
excluded) is reported apart (``export_process_cpu_us_per_rt``): it runs on another core,
as a collector would.

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
    processors: list[OtlpBatchSpanProcessor] = []
    settle: dict[str, Any] = {}

    def traced(
        metrics: bool,
        name: str,
        exporter_class: type | None = OTLPSpanExporter,
        sdk_batch: bool = False,
        export_process: bool = True,
    ) -> tuple[tether.Agent, ScriptedProvider]:
        tracer_provider = TracerProvider()
        to_process: OtlpBatchSpanProcessor | None = None
        if exporter_class is Discard:
            tracer_provider.add_span_processor(BatchSpanProcessor(Discard()))
        elif exporter_class is OTLPSpanExporter and not sdk_batch:  # what the config builds
            exporter = exporter_class(endpoint=f"{receiver_url}/v1/traces")
            processor = OtlpBatchSpanProcessor(exporter, export_process=export_process)
            tracer_provider.add_span_processor(processor)
            if export_process:
                processors.append(processor)
                to_process = processor
        elif exporter_class is not None:
            exporter = exporter_class(endpoint=f"{receiver_url}/v1/traces")
            tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()]) if metrics else None
        flushers[name] = [p for p in (tracer_provider, meter_provider) if p is not None]
        providers.extend(flushers[name])
        if to_process is not None:
            # Spans written to the export process have left this one: the block waits for
            # that, and for the export process to finish only after its time is taken.
            flushers[name][0] = to_process.send_waiting
            settle[name] = tracer_provider.force_flush
        plugin = OtelPlugin(
            tracer_provider=tracer_provider, meter_provider=meter_provider, name=name
        )
        return make_agent([plugin])

    agents = {
        "plain": make_agent([]),
        "traced": traced(False, "traced"),
        "traced_and_metrics": traced(True, "traced_and_metrics"),
        "traced_in_thread": traced(False, "traced_in_thread", export_process=False),
        "traced_sdk_exporter": traced(False, "traced_sdk_exporter", SdkOTLPSpanExporter),
    }
    if breakdown:  # the SDK's batch processor (queueing span objects) with tether's exporter
        agents["traced_sdk_batch"] = traced(False, "traced_sdk_batch", sdk_batch=True)
    if breakdown:  # the spans' share without export, and without any span processor
        agents["spans_discarded"] = traced(False, "spans_discarded", Discard)
        agents["spans_no_processor"] = traced(False, "spans_no_processor", None)

    async def one_block(name: str) -> tuple[float, float]:
        """Wall and CPU seconds of ``block`` runs and the export of their spans and
        metrics (flushed and collected at the end of the block)."""
        gc.collect()
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        for _ in range(block):
            await one_run(*agents[name])
        for flusher in flushers[name]:
            getattr(flusher, "force_flush", flusher)()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if name in settle:
            settle[name]()
        return wall, cpu

    for name in agents:  # warm-up
        await one_block(name)
    children = [p._process.pid for p in processors if p._process is not None]
    export_cpu_before = sum(_cpu_seconds(pid) for pid in children)  # its start-up
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in agents}
    names = list(agents)
    for i in range(reps):
        for name in names[i % len(names) :] + names[: i % len(names)]:  # rotate the order
            samples[name].append(await one_block(name))
    export_cpu = sum(_cpu_seconds(pid) for pid in children) - export_cpu_before
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
    runs = reps * block * len(children)
    out["export_process_cpu_us_per_rt"] = (
        round(export_cpu / (runs * (A_TOOL_CALLS + 1)) * 1e6, 1) if runs else None
    )
    out.update(
        spans_per_run=2 * A_TOOL_CALLS + 2,
        reps=reps,
        runs_per_block=block,
        load_average_1m=round(os.getloadavg()[0], 1),
        load_average_1m_before=load_before,
    )
    return out


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a live process (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
        f"CPU {out['traced_cpu_overhead']:+.1%}; export process "
        f"{out['export_process_cpu_us_per_rt']} us/RT), "
        f"{out['a_us_per_rt_traced_in_thread']} exported from a thread "
        f"({out['traced_in_thread_overhead']:+.1%}, CPU {out['traced_in_thread_cpu_overhead']:+.1%}), "
        f"{out['a_us_per_rt_traced_and_metrics']} with metrics too "
        f"({out['traced_and_metrics_overhead']:+.1%}, CPU {out['traced_and_metrics_cpu_overhead']:+.1%}); "
        f"spans through the SDK's exporter {out['a_us_per_rt_traced_sdk_exporter']} "
        f"({out['traced_sdk_exporter_overhead']:+.1%}, CPU {out['traced_sdk_exporter_cpu_overhead']:+.1%})",
        file=sys.stderr,
    )
    print(json.dumps({"benchmark": "otel_overhead", **out}), flush=True)


if __name__ == "__main__":
    main()
