"""What tracing adds to a model round trip: tether-otel against pydantic-ai's
instrumentation, side by side in one run, both exporting over OTLP/HTTP to one sink.

Three processes besides this one: an OTLP/HTTP sink on loopback (it answers 200 and
decodes each request with ``opentelemetry-proto`` to count the spans), tether's worker
(this file with ``--worker``, in tether's environment) and pydantic-ai's worker
(``tracing_peer_pydantic_ai.py``, in an environment with pydantic-ai, given by
``--peer-python``). Both run the A scenario of ``overhead.py`` (the scripted model calls
the async tool ``add`` 50 times, one call per response, then answers: 51 round trips)
with the same agents:

- ``plain``: no instrumentation;
- ``spans``: spans to an SDK ``TracerProvider`` with the SDK's ``BatchSpanProcessor`` and
  OTLP/HTTP exporter (what ``[observers.otel]`` builds), no metrics, no message content;
- ``spans_and_metrics``: the same, and metrics to an SDK ``MeterProvider``;
- ``spans_with_content``: the same as ``spans``, recording message content (pydantic-ai's
  default).

The workers take turns: in each round this process asks one worker, then the other (the
first alternating), to time one block of runs of each of its agents (in a rotating order);
a block's wall and CPU time (all threads of the worker: the export thread's work
included) cover its runs and a flush of its spans at the end, so export work put off is
counted. An agent's added cost per round trip is the median over rounds of (its block −
the plain block of the same round) / (runs × 51).

Run: ``python bench/tracing_bench.py --peer-python PEERS_VENV/bin/python`` (progress on
stderr, a table, then one JSON line on stdout). See bench/README.md for the environment.
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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROUND_TRIPS = 51
AGENTS = ("spans", "spans_and_metrics", "spans_with_content")


# -- the sink ------------------------------------------------------------------------------------
def sink() -> None:
    """Serve OTLP/HTTP on loopback: print the URL, count spans by ``x-bench-agent``,
    answer ``GET /stats`` with the counts; stop when stdin closes."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    counts: dict[str, int] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/v1/traces":
                message = ExportTraceServiceRequest()
                message.ParseFromString(body)
                spans = sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
                with lock:
                    agent = self.headers.get("x-bench-agent", "?")
                    counts[agent] = counts.get(agent, 0) + spans
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            with lock:
                body = json.dumps(counts).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


# -- tether's worker -----------------------------------------------------------------------------
def worker(sink_url: str, block: int) -> None:
    """tether's side: the protocol of ``tracing_peer_pydantic_ai.py``."""
    os.environ["TETHER_RUN_LOG"] = "off"  # telemetry alone
    sys.path.insert(0, str(HERE))
    from importlib.metadata import version

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from overhead import A_TOOL_CALLS, add, tool_script

    import tether
    from tether.config import Config
    from tether.testing import ScriptedProvider
    from tether_otel import OtelPlugin

    flushers: dict[str, list[Any]] = {}
    agents: dict[str, tuple[tether.Agent, ScriptedProvider]] = {}

    def make_agent(name: str, plugins: list[object]) -> None:
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
        agents[name] = (agent, provider)

    def traced(name: str, *, metrics: bool, content: bool) -> None:
        tracer_provider = TracerProvider()
        exporter = OTLPSpanExporter(
            endpoint=f"{sink_url}/v1/traces", headers={"x-bench-agent": f"tether {name}"}
        )
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()]) if metrics else None
        flushers[name] = [p for p in (tracer_provider, meter_provider) if p is not None]
        plugin = OtelPlugin(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=content,
            name=name,
        )
        make_agent(name, [plugin])

    make_agent("plain", [])
    traced("spans", metrics=False, content=False)
    traced("spans_and_metrics", metrics=True, content=False)
    traced("spans_with_content", metrics=False, content=True)

    async def one_run(name: str) -> None:
        agent, provider = agents[name]
        provider.reset(tool_script(A_TOOL_CALLS))
        result = await agent.run("go")
        assert result.ok and result.tool_calls == A_TOOL_CALLS

    async def one_block(name: str) -> tuple[float, float]:
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(block):
            await one_run(name)
        for provider in flushers.get(name, ()):
            provider.force_flush()
        return time.perf_counter() - wall, time.process_time() - cpu

    async def serve() -> None:
        names = list(agents)
        for name in names:  # warm up
            for _ in range(3):
                await one_run(name)
            for provider in flushers.get(name, ()):
                provider.force_flush()
        print(json.dumps({"ready": "tether", "version": version("tether")}), flush=True)
        for turn, line in enumerate(sys.stdin):
            if line.strip() != "round":
                break
            order = names[turn % len(names) :] + names[: turn % len(names)]
            times = {name: await one_block(name) for name in order}
            print(json.dumps(times), flush=True)

    asyncio.run(serve())


# -- the driver ----------------------------------------------------------------------------------
class Worker:
    def __init__(self, name: str, command: list[str], block: int) -> None:
        self.name = name
        self.block = block
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.ready = json.loads(self._line())
        self.rounds: list[dict[str, list[float]]] = []

    def _line(self) -> str:
        stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        line = stdout.readline()
        if not line:
            raise SystemExit(f"the {self.name} worker exited (code {self.process.wait()})")
        return line

    def round(self) -> None:
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdin.write("round\n")
        stdin.flush()
        self.rounds.append(json.loads(self._line()))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)

    def added_us_per_rt(self, agent: str, field: int) -> float:
        """Median over rounds of (agent − plain) per round trip, in µs (0: wall, 1: CPU)."""
        per_rt = self.block * ROUND_TRIPS
        return statistics.median(
            (r[agent][field] - r["plain"][field]) / per_rt * 1e6 for r in self.rounds
        )

    def plain_us_per_rt(self, field: int) -> float:
        per_rt = self.block * ROUND_TRIPS
        return statistics.median(r["plain"][field] / per_rt * 1e6 for r in self.rounds)


def drive(args: argparse.Namespace) -> None:
    sink_process = subprocess.Popen(
        [sys.executable, __file__, "--sink"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert sink_process.stdout is not None
    sink_url = sink_process.stdout.readline().strip()
    load_before = round(os.getloadavg()[0], 1)
    workers = [
        Worker(
            "tether",
            [sys.executable, __file__, "--worker", sink_url, str(args.tether_block)],
            args.tether_block,
        )
    ]
    if args.peer_python:
        peer = str(HERE / "tracing_peer_pydantic_ai.py")
        command = [args.peer_python, peer, sink_url, str(args.peer_block)]
        workers.append(Worker("pydantic-ai", command, args.peer_block))
    else:
        print("no --peer-python: tether alone", file=sys.stderr)
    try:
        for number in range(args.rounds):
            order = workers if number % 2 == 0 else workers[::-1]
            for w in order:
                w.round()
            print(f"round {number + 1}/{args.rounds}", file=sys.stderr)
    finally:
        for w in workers:
            w.close()
    import urllib.request

    with urllib.request.urlopen(f"{sink_url}/stats", timeout=10) as response:
        spans = json.loads(response.read())
    assert sink_process.stdin is not None
    sink_process.stdin.close()
    sink_process.wait(timeout=30)

    out: dict[str, Any] = {
        "benchmark": "tracing",
        "rounds": args.rounds,
        "load_before": load_before,
        "load_after": round(os.getloadavg()[0], 1),
        "spans_received": spans,
    }
    for w in workers:
        out[w.name] = {
            "version": w.ready["version"],
            "runs_per_block": w.block,
            "plain_us_per_rt": round(w.plain_us_per_rt(0), 1),
            "plain_cpu_us_per_rt": round(w.plain_us_per_rt(1), 1),
            **{
                f"{agent}_added_us_per_rt": round(w.added_us_per_rt(agent, 0), 1)
                for agent in AGENTS
            },
            **{
                f"{agent}_added_cpu_us_per_rt": round(w.added_us_per_rt(agent, 1), 1)
                for agent in AGENTS
            },
        }
    if len(workers) == 2:
        ours, theirs = out["tether"], out["pydantic-ai"]
        out["ratio"] = {
            f"{agent}{suffix}": round(
                ours[f"{agent}_added{suffix}_us_per_rt"]
                / theirs[f"{agent}_added{suffix}_us_per_rt"],
                3,
            )
            for agent in AGENTS
            for suffix in ("", "_cpu")
        }
    print_table(out, [w.name for w in workers])
    print(json.dumps(out), flush=True)


def print_table(out: dict[str, Any], names: list[str]) -> None:
    header = "| added per round trip (µs, wall / CPU) | " + " | ".join(names)
    rows = [header + (" | tether ÷ pydantic-ai |" if len(names) == 2 else " |")]
    rows.append("|" + " --- |" * (len(names) + 1 + (len(names) == 2)))
    plain = " | ".join(
        f"{out[n]['plain_us_per_rt']:.0f} / {out[n]['plain_cpu_us_per_rt']:.0f}" for n in names
    )
    rows.append(f"| plain round trip (not added) | {plain} |" + (" |" if len(names) == 2 else ""))
    for agent in AGENTS:
        cells = " | ".join(
            f"{out[n][f'{agent}_added_us_per_rt']:.0f} / {out[n][f'{agent}_added_cpu_us_per_rt']:.0f}"
            for n in names
        )
        ratio = ""
        if len(names) == 2:
            ratio = f" {out['ratio'][agent]:.2f} / {out['ratio'][agent + '_cpu']:.2f} |"
        rows.append(f"| {agent} | {cells} |{ratio}")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sink", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs=2, metavar=("SINK", "BLOCK"), help=argparse.SUPPRESS)
    parser.add_argument("--peer-python", default=os.environ.get("PEERS_PYTHON"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tether-block", type=int, default=20, help="runs per tether block")
    parser.add_argument("--peer-block", type=int, default=4, help="runs per pydantic-ai block")
    args = parser.parse_args()
    if args.sink:
        sink()
    elif args.worker:
        worker(args.worker[0], int(args.worker[1]))
    else:
        drive(args)


if __name__ == "__main__":
    main()
