"""The scenario of ``concurrent_runs_bench.py`` with pydantic-ai, for a side-by-side figure.

Run in an environment with pydantic-ai (it is not a dependency of this workspace):
``PEERS_VENV/bin/python bench/concurrent_runs_peer_pydantic_ai.py [RUNS] [--rounds N]``.

As in tether's bench: one ``Agent`` serves every run; a scripted model (``FunctionModel``)
calls one async tool, then answers; all runs start at once on one event loop beside a
ticker that asks to wake every 5 ms. pydantic-ai has no session store, so each run keeps
its conversation as a JSON-lines file the way an application would: the file is opened
on a thread, and each new message is encoded on the loop and written and fsynced on a
thread (``asyncio.to_thread``), four messages a run, as tether's ``JsonlSession`` does.
Prints one JSON line with the same fields as ``concurrent_runs_bench.py``'s ``off_loop``.
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

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

TICK = 0.005
USAGE = RequestUsage(input_tokens=10, output_tokens=5)


async def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call ``lookup`` once for the question, then answer."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not returns:
        number = str(last.parts[-1].content).split()[-1]  # type: ignore[union-attr]
        call = ToolCallPart("lookup", {"key": f"k{number}"}, tool_call_id=f"call-{number}")
        return ModelResponse(parts=[call], usage=USAGE)
    return ModelResponse(
        parts=[TextPart(f"done {returns[0].tool_call_id.split('-')[-1]}")], usage=USAGE
    )


agent = Agent(FunctionModel(model_fn), output_type=str)


@agent.tool_plain
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _append(fd: int, line: bytes) -> None:
    os.write(fd, line)
    os.fsync(fd)


async def one_run(directory: Path, number: int) -> None:
    path = directory / f"s{number}.jsonl"
    fd = await asyncio.to_thread(os.open, path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        async with agent.iter(f"question {number}") as run:
            written = 0
            async for _node in run:
                messages = run.all_messages()
                for message in messages[written:]:
                    line = ModelMessagesTypeAdapter.dump_json([message])[1:-1] + b"\n"
                    await asyncio.to_thread(_append, fd, line)
                written = len(messages)
        assert run.result is not None and run.result.output == f"done {number}", run.result
    finally:
        await asyncio.to_thread(os.close, fd)


async def measure(runs: int) -> dict[str, Any]:
    stalls: list[float] = []
    busy: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            before, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(TICK)
            stalls.append(max(time.perf_counter() - before - TICK, 0.0))
            busy.append(time.thread_time() - cpu)

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        watch = asyncio.create_task(ticker())
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one_run(directory, n) for n in range(runs)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        stop.set()
        await watch
        lines = sum(len((directory / f"s{n}.jsonl").read_bytes().splitlines()) for n in range(3))
        assert lines == 12, f"expected 4 messages a run, found {lines} in 3 runs"
    stalls.sort()
    return {
        "runs_per_s": round(runs / elapsed, 1),
        "max_stall_ms": round(stalls[-1] * 1000, 1),
        "p99_stall_ms": round(stalls[int(len(stalls) * 0.99)] * 1000, 1),
        "max_loop_cpu_ms": round(max(busy) * 1000, 1),
        "cpu_ms_per_run": round(cpu / runs * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(measure(20))  # warm-up: imports, schemas, threads
    rows = []
    for number in range(args.rounds):
        rows.append(asyncio.run(measure(args.runs)))
        print(f"round {number + 1}: {rows[-1]}", file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "framework": "pydantic-ai",
                "runs": args.runs,
                "rounds": args.rounds,
                "runs_per_s": statistics.median(r["runs_per_s"] for r in rows),
                "max_stall_ms": max(r["max_stall_ms"] for r in rows),
                "median_max_stall_ms": statistics.median(r["max_stall_ms"] for r in rows),
                "p99_stall_ms": statistics.median(r["p99_stall_ms"] for r in rows),
                "max_loop_cpu_ms": max(r["max_loop_cpu_ms"] for r in rows),
                "cpu_ms_per_run": statistics.median(r["cpu_ms_per_run"] for r in rows),
            }
        )
    )


if __name__ == "__main__":
    main()
