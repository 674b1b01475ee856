"""Cost of tracing on the A benchmark of ``overhead.py``, measured in the same run.

The same scripted run (the model calls ``add`` 50 times, one call per response, then
answers; 51 model round trips) is timed three ways: without tether-otel; with its spans
going to an SDK tracer provider whose batch processor exports over OTLP/HTTP to a
receiver on loopback; and with the metrics recorded as well. Each sample is a block of
runs: its wall time (the batch processor exports on its own thread meanwhile, as in
production), and the process's CPU time for the runs plus a flush of the exporter at the
end of the block, so the export's own work (encoding, sending) is counted. Blocks rotate between the three agents so that drift of a shared machine
hits all alike. The run log is off in all three, so the ratios are telemetry alone.

Run: ``python bench/otel_overhead.py`` (progress on stderr, one JSON line on stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from typing import Any

os.environ["TETHER_RUN_LOG"] = "off"

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from overhead import A_TOOL_CALLS, add, tool_script

import tether
from tether.config import Config
from tether.testing import ScriptedProvider
from tether.testing.http import FakeResponse, FakeServer
from tether_otel import OtelPlugin


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


async def measure(reps: int, block: int, receiver_url: str) -> dict[str, object]:
    flushers: dict[str, list[Any]] = {"plain": []}
    providers: list[Any] = []

    def traced(metrics: bool, name: str) -> tuple[tether.Agent, ScriptedProvider]:
        tracer_provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=f"{receiver_url}/v1/traces")
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()]) if metrics else None
        flushers[name] = [tracer_provider]
        providers.extend(p for p in (tracer_provider, meter_provider) if p is not None)
        plugin = OtelPlugin(
            tracer_provider=tracer_provider, meter_provider=meter_provider, name=name
        )
        return make_agent([plugin])

    agents = {
        "plain": make_agent([]),
        "traced": traced(False, "traced"),
        "traced_and_metrics": traced(True, "traced_and_metrics"),
    }

    async def one_block(name: str) -> tuple[float, float]:
        """Wall seconds of ``block`` runs (the exporter works in the background, as it
        does in production), and the process's CPU seconds for them and the export of
        their spans (flushed at the end of the block: encoding and sending included)."""
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
        for name in names[i % 3 :] + names[: i % 3]:  # rotate the order
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
    for name in ("traced", "traced_and_metrics"):
        out[f"{name}_overhead"] = round(wall[name] / wall["plain"] - 1, 3)
        out[f"{name}_cpu_overhead"] = round(cpu[name] / cpu["plain"] - 1, 3)
    out.update(
        spans_per_run=2 * A_TOOL_CALLS + 2,
        reps=reps,
        runs_per_block=block,
        load_average_1m=round(os.getloadavg()[0], 1),
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--block", type=int, default=5, help="runs per timed block")
    args = parser.parse_args()
    with FakeServer(lambda r: FakeResponse(status=200, body=b"")) as receiver:
        out = asyncio.run(measure(args.reps, args.block, receiver.url))
        exported = sum(1 for r in receiver.requests if r.path == "/v1/traces")
    out["otlp_requests"] = exported
    print(
        f"[tether-otel] A: {out['a_us_per_rt_plain']} us/RT plain, "
        f"{out['a_us_per_rt_traced']} traced ({out['traced_overhead']:+.1%}, "
        f"CPU {out['traced_cpu_overhead']:+.1%}), "
        f"{out['a_us_per_rt_traced_and_metrics']} with metrics too "
        f"({out['traced_and_metrics_overhead']:+.1%}, CPU {out['traced_and_metrics_cpu_overhead']:+.1%})",
        file=sys.stderr,
    )
    print(json.dumps({"benchmark": "otel_overhead", **out}), flush=True)


if __name__ == "__main__":
    main()
