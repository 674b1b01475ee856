"""1,000 concurrent runs with durable sessions in one process: throughput and loop stalls.

Run: ``python bench/concurrent_runs_bench.py [RUNS] [--rounds N] [--modes off_loop]``
(default 1,000 runs, 3 rounds, both modes). As a server would,
one ``Agent`` serves every run, and every run has its own ``JsonlSession``
(``durable=True``: every append is fsynced), opened on a thread. The scripted model calls
one tool and then answers, so each run writes four messages. All runs start at once on
one event loop, beside a ticker task that asks to wake every 5 ms and records how late it
wakes: the longest lateness is the longest time the loop could not serve anything else.

Two modes are measured in the same process, alternating:

- ``on_loop``: the session's writes run on the event loop (what the runner did before
  sessions had ``append_async``), forced by hiding the session's async methods;
- ``off_loop``: the default, writes (and their fsyncs) on the disk threads.

Prints one JSON line: per mode, runs per second, the longest and the 99th-percentile
stall in milliseconds (goal for ``off_loop``: no stall over 50 ms), ``max_loop_cpu_ms``,
the most CPU time the loop's thread spent between two ticks, and ``cpu_ms_per_run``, the
process's CPU time (every thread) per run. No run log is written (``TETHER_RUN_LOG=off``
unless set): the figure is the loop and its sessions. ``concurrent_runs_peer_pydantic_ai.py``
runs the same scenario with pydantic-ai. A stall
is wall time, so on a loaded machine it includes time the process was not scheduled at
all; the CPU figure is the loop's own work, but does not see time spent blocked in a
system call such as ``fsync`` (which the stall does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tether
from tether.config import Config
from tether.provider import ModelRequest
from tether.sessions import JsonlSession, close_session
from tether.testing import Reply, ScriptedProvider, call
from tether.tools import tool

os.environ.setdefault("TETHER_RUN_LOG", "off")
TICK = 0.005


class OnLoopSession(JsonlSession):
    """A JsonlSession without its async methods: the runner then writes on the loop."""

    append_async = None  # type: ignore[assignment]
    replace_async = None  # type: ignore[assignment]


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def answer(request: ModelRequest) -> Reply:
    """Call ``lookup`` once for the question, then answer."""
    last = request.messages[-1]
    if last.role == "user":
        number = last.text.split()[-1]
        return Reply(tool_calls=[call("lookup", id=f"call-{number}", key=f"k{number}")])
    return Reply(text=f"done {last.tool_results[0].call_id.split('-')[-1]}")


def make_agent(directory: Path) -> tether.Agent:
    provider = ScriptedProvider(handler=answer)
    provider.record_requests = False
    return tether.Agent(provider, tools=[lookup], config=Config(), cwd=directory)


async def one_run(
    agent: tether.Agent, directory: Path, number: int, session_class: type[JsonlSession]
) -> None:
    # Opening reads (and, for a new file, writes) the file: on a thread, as it should be.
    session = await asyncio.to_thread(session_class, directory / f"s{number}.jsonl")
    try:
        result = await agent.run(f"question {number}", session=session)
        assert result.output == f"done {number}", result
    finally:
        await close_session(session)  # its file closed on a disk thread too


async def measure(runs: int, session_class: type[JsonlSession]) -> dict[str, Any]:
    stalls: list[float] = []
    stop = asyncio.Event()

    busy: list[float] = []

    async def ticker() -> None:
        while not stop.is_set():
            before, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(TICK)
            stalls.append(max(time.perf_counter() - before - TICK, 0.0))
            busy.append(time.thread_time() - cpu)

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        agent = make_agent(directory)
        watch = asyncio.create_task(ticker())
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one_run(agent, directory, n, session_class) for n in range(runs)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        stop.set()
        await watch
    stalls.sort()
    return {
        "max_loop_cpu_ms": round(max(busy) * 1000, 1),
        "runs_per_s": round(runs / elapsed, 1),
        "seconds": round(elapsed, 2),
        "max_stall_ms": round(stalls[-1] * 1000, 1),
        "p99_stall_ms": round(stalls[int(len(stalls) * 0.99)] * 1000, 1),
        "cpu_ms_per_run": round(cpu / runs * 1000, 3),
    }


MODES: dict[str, type[JsonlSession]] = {"on_loop": OnLoopSession, "off_loop": JsonlSession}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="on_loop,off_loop")
    args = parser.parse_args()
    runs, rounds = args.runs, args.rounds
    modes = {mode: MODES[mode] for mode in args.modes.split(",")}
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for session_class in modes.values():  # warm-up: imports, schemas, threads
        asyncio.run(measure(20, session_class))
    for round_number in range(rounds):
        for mode, session_class in modes.items():
            figures = asyncio.run(measure(runs, session_class))
            results[mode].append(figures)
            print(f"round {round_number + 1} {mode}: {figures}", file=sys.stderr)
    summary = {
        mode: {
            "runs_per_s": statistics.median(r["runs_per_s"] for r in rows),
            "max_stall_ms": max(r["max_stall_ms"] for r in rows),
            "median_max_stall_ms": statistics.median(r["max_stall_ms"] for r in rows),
            "p99_stall_ms": statistics.median(r["p99_stall_ms"] for r in rows),
            "max_loop_cpu_ms": max(r["max_loop_cpu_ms"] for r in rows),
            "cpu_ms_per_run": statistics.median(r["cpu_ms_per_run"] for r in rows),
        }
        for mode, rows in results.items()
    }
    print(json.dumps({"runs": runs, "rounds": rounds, **summary}))


if __name__ == "__main__":
    main()
