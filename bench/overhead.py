"""Harness CPU overhead per model round trip, with a scripted in-process model.

Scenarios (the same as the peer benchmarks for pydantic-ai, the OpenAI Agents SDK and
LangGraph, measured the same way, so the numbers can be compared in one run):

- A: one run in which the model calls ``add(a, b)`` 50 times, one call per response,
  then answers; µs per model round trip (run time / 51). ``a500_us_per_rt_cold`` is one
  cold run with 500 calls, which shows whether per-turn cost grows with the history.
- B: 1,000 separate short runs (one tool call, then an answer); µs per run.
- C: one response streamed as 2,000 one-character text deltas; µs per delta.
- Peak RSS of a fresh child process doing A with 500 calls.

Run: ``python bench/overhead.py`` (prints progress on stderr and one JSON line on stdout).
Side by side with the peers: see bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version

import tether
from tether.config import Config
from tether.events import TextDelta
from tether.messages import ToolCallBlock
from tether.testing import Reply, ScriptedProvider

# Runs are recorded in the run log as usual (its cost is part of the figures), but into a
# throwaway file, not the user's: TETHER_RUN_LOG=off measures the loop without it.
os.environ.setdefault(
    "TETHER_RUN_LOG", os.path.join(tempfile.mkdtemp(prefix="tether-bench-"), "runs.sqlite")
)

A_TOOL_CALLS = 50
RSS_TOOL_CALLS = 500


@tether.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tool_script(n: int) -> list[Reply]:
    replies = [
        Reply(tool_calls=[ToolCallBlock(id=f"c{i}", name="add", arguments={"a": i, "b": 1})])
        for i in range(n)
    ]
    return [*replies, Reply(text="done")]


provider = ScriptedProvider()
provider.record_requests = False
agent = tether.Agent(
    provider, tools=[add], system="You add numbers.", config=Config(), limits={"max_turns": 10_000}
)


async def tool_loop(n: int) -> object:
    provider.reset(tool_script(n))
    return await agent.run("go")


async def short_run() -> object:
    provider.reset(tool_script(1))
    return await agent.run("go")


def stream_prepare(k: int) -> None:
    provider.reset([Reply(chunks=["x"] * k)])


async def stream(k: int) -> int:
    seen = 0
    async for event in agent.stream("go"):
        if type(event) is TextDelta:
            seen += 1
    return seen


async def check() -> None:
    result = await tool_loop(3)
    assert result.output == "done" and result.tool_calls == 3, result  # type: ignore[attr-defined]
    assert result.messages[-2].tool_results[0].text == "3", result.messages[-2]  # type: ignore[attr-defined]
    stream_prepare(10)
    assert await stream(10) == 10


# -- measurement (mirrors the peers' harness: warm-ups, medians, CPU time alongside) ---------
def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


async def sample(
    fn: Callable[[], Awaitable[object]],
    n: int,
    warmup: int,
    collect_each: bool,
    prepare: Callable[[], object] | None = None,
) -> tuple[list[float], float]:
    for _ in range(warmup):
        if prepare:
            prepare()
        await fn()
    gc.collect()
    walls: list[float] = []
    cpu = 0.0
    for _ in range(n):
        if prepare:
            prepare()
        if collect_each:
            gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        await fn()
        walls.append(time.perf_counter() - t0)
        cpu += time.process_time() - c0
    return walls, cpu


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def calibrate() -> dict[str, float]:
    sleeps, loops = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10_000):
            await asyncio.sleep(0)
        sleeps.append((time.perf_counter() - t0) / 10_000 * 1e6)
        t0 = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        loops.append((time.perf_counter() - t0) * 1e3)
    return {
        "calib_sleep0_us": round(statistics.median(sleeps), 2),
        "calib_1m_adds_ms": round(statistics.median(loops), 1),
    }


def vm_field(name: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def rss_child() -> None:
    gc.collect()
    import_peak = vm_field("VmHWM") or 0.0
    before = vm_field("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:  # noqa: ASYNC230
            f.write("5")
        reset = True
    except OSError:
        reset = False
    t0 = time.perf_counter()
    await tool_loop(RSS_TOOL_CALLS)
    dt = time.perf_counter() - t0
    run_peak = vm_field("VmHWM") or 0.0
    print(
        json.dumps(
            {
                "a500_peak_rss_mib": round(max(import_peak, run_peak), 1),
                "a500_rss_before_run_mib": None if before is None else round(before, 1),
                "a500_run_peak_rss_mib": round(run_peak, 1) if reset else None,
                "a500_run_growth_mib": round(run_peak - before, 1)
                if reset and before is not None
                else None,
                "a500_us_per_rt_cold": round(dt / (RSS_TOOL_CALLS + 1) * 1e6, 1),
            }
        )
    )


async def run_all(args: argparse.Namespace) -> dict[str, object]:
    await check()
    out: dict[str, object] = await calibrate()
    rts = A_TOOL_CALLS + 1
    walls, cpu = await sample(
        lambda: tool_loop(A_TOOL_CALLS), args.a_reps, warmup=3, collect_each=True
    )
    median = statistics.median(walls)
    out["a_us_per_rt"] = round(median / rts * 1e6, 1)
    out["a_us_per_rt_p10_p90"] = [
        round(quantile(walls, 0.1) / rts * 1e6, 1),
        round(quantile(walls, 0.9) / rts * 1e6, 1),
    ]
    out["a_cpu_us_per_rt"] = round(cpu / (args.a_reps * rts) * 1e6, 1)
    out["a_us_per_run"] = round(median * 1e6, 1)
    log(f"[tether] A: {out['a_us_per_rt']} us/round-trip")

    walls, cpu = await sample(short_run, args.b_runs, warmup=50, collect_each=False)
    out["b_us_per_run"] = round(statistics.median(walls) * 1e6, 1)
    out["b_us_per_run_p10_p90"] = [
        round(quantile(walls, 0.1) * 1e6, 1),
        round(quantile(walls, 0.9) * 1e6, 1),
    ]
    out["b_cpu_us_per_run"] = round(cpu / args.b_runs * 1e6, 1)
    out["marginal_us_per_rt"] = round(
        (float(out["a_us_per_run"]) - float(out["b_us_per_run"])) / (rts - 2), 1
    )  # type: ignore[arg-type]
    log(f"[tether] B: {out['b_us_per_run']} us/run")

    k = args.c_deltas

    async def one() -> None:
        got = await stream(k)
        assert got == k, f"expected {k} deltas, saw {got}"

    walls, cpu = await sample(
        one, args.c_reps, warmup=2, collect_each=True, prepare=lambda: stream_prepare(k)
    )
    out["c_us_per_delta"] = round(statistics.median(walls) / k * 1e6, 2)
    out["c_cpu_us_per_delta"] = round(cpu / (args.c_reps * k) * 1e6, 2)
    log(f"[tether] C: {out['c_us_per_delta']} us/delta")
    return out


async def count_calls() -> dict[str, float]:
    """Python and C function calls (``sys.setprofile``) per round trip of A, per short run
    of B and per delta of C: a figure that the machine's load does not move."""
    calls = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" or event == "c_call":
            calls += 1

    async def counted(fn: Callable[[], Awaitable[object]]) -> int:
        nonlocal calls
        calls = 0
        sys.setprofile(profile)
        try:
            await fn()
        finally:
            sys.setprofile(None)
        return calls

    await tool_loop(3)  # warm
    a10, a60 = await counted(lambda: tool_loop(10)), await counted(lambda: tool_loop(60))
    b1 = await counted(short_run)
    stream_prepare(1000)
    c1 = await counted(lambda: stream(1000))
    stream_prepare(2000)
    c2 = await counted(lambda: stream(2000))
    return {
        "a_calls_per_rt": (a60 - a10) / 50,
        "b_calls_per_run": b1,
        "c_calls_per_delta": (c2 - c1) / 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a-reps", type=int, default=20)
    parser.add_argument("--b-runs", type=int, default=1000)
    parser.add_argument("--c-reps", type=int, default=20)
    parser.add_argument("--c-deltas", type=int, default=2000)
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument(
        "--count-calls", action="store_true", help="only count function calls per unit of work"
    )
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.rss_child:
        asyncio.run(rss_child())
        return
    if args.count_calls:
        print(json.dumps(asyncio.run(count_calls())))
        return
    out = asyncio.run(run_all(args))
    if not args.no_rss:
        child = subprocess.run(
            [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--rss-child"],
            capture_output=True,
            text=True,
            check=True,
        )
        out.update(json.loads(child.stdout.strip().splitlines()[-1]))
        log(
            f"[tether] A500: peak RSS {out['a500_peak_rss_mib']} MiB, {out['a500_us_per_rt_cold']} us/RT cold"
        )
    result = {
        "framework": "tether",
        "versions": {p: version(p) for p in ("tether", "pydantic", "pydantic-core", "pluggy")},
        "python": platform.python_version(),
        **out,
        "params": {
            "a_tool_calls": A_TOOL_CALLS,
            "a_reps": args.a_reps,
            "b_runs": args.b_runs,
            "c_deltas": args.c_deltas,
            "c_reps": args.c_reps,
            "rss_tool_calls": RSS_TOOL_CALLS,
        },
        "notes": "ScriptedProvider, async tool, fresh in-memory session per run",
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
