"""Durable runs and shared session stores: what they cost.

Run: ``python bench/durable_bench.py`` (needs PostgreSQL on 127.0.0.1:5432 and Redis on
127.0.0.1:6379, as the tests do; it creates and drops its own databases and keys).
Prints progress on stderr and one JSON line on stdout:

- ``append``: median and p99 latency of one session append per store (JSONL with and
  without fsync, SQLite, PostgreSQL, Redis), appending to a history that grows to 500
  messages.
- ``step_overhead``: one run of ``rounds`` tool rounds (so ``rounds + 1`` model requests
  and ``rounds`` tool calls: the "steps") with the same instant model and tool, on the
  PostgreSQL session store, as a plain ``Agent.run`` and as a DBOS workflow in this
  process. ``overhead_ms_per_step`` is the difference per step (goal: <= 2 ms), ``ratio``
  the durable time over the plain time. Medians of ``repeats``. Measured twice: with
  DBOS's checkpoints committed synchronously (the default) and with
  ``synchronous_commit = false``. The worker polls its queue every 0.2 s (the default
  ``poll_interval_s``): these runs do not go through the queue, and polling every
  0.02 s (as the queue measurement below does) costs an idle worker a quarter of a
  core, which the runs measured would share.
- ``queue``: runs per second through the DBOS queue with 1 and with 3 ``tether worker``
  processes (started and ready before the clock starts), ``runs`` runs of one tool round
  each.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from tether.config import load_config  # noqa: E402
from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock, new_id  # noqa: E402
from tether.sessions import append_message, close_session  # noqa: E402
from tether_postgres.testing import temporary_database  # noqa: E402

TETHER = Path(sys.executable).with_name("tether")
AGENT = "durable_bench_agent:make_agent"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def write_config(root: Path, url: str, *, poll: float = 0.02, sync: bool = True) -> Path:
    path = root / "tether.toml"
    path.write_text(
        "[sessions]\n"
        'store = "postgres"\n'
        f'settings = {{ dsn = "{url}" }}\n'
        "[durable]\n"
        'engine = "dbos"\n'
        f'settings = {{ database_url = "{url}", poll_interval_s = {poll}, worker_concurrency = 32, '
        f"synchronous_commit = {'true' if sync else 'false'} }}\n"
    )
    return path


# -- append latency ---------------------------------------------------------------------------
def _messages(count: int) -> list[Message]:
    out: list[Message] = []
    for n in range(count // 2):
        call = ToolCallBlock(id=f"c{n}", name="read_file", arguments={"path": f"src/m{n}.py"})
        out.append(Message(role="assistant", content=[TextBlock(text="Reading."), call]))
        out.append(Message.tool([ToolResultBlock(call_id=f"c{n}", content="x = 1\n" * 40)]))
    return out


async def _append_latency(store: Any, label: str) -> dict[str, float]:
    name = f"bench-{new_id()[:8]}"
    session = await store.open(name)
    times = []
    for message in _messages(500):
        started = time.perf_counter()
        await append_message(session, message)
        times.append(time.perf_counter() - started)
    await close_session(session)
    await store.remove(name)
    await store.aclose()
    times.sort()
    result = {"p50_us": times[len(times) // 2] * 1e6, "p99_us": times[int(len(times) * 0.99)] * 1e6}
    log(f"append {label}: p50 {result['p50_us']:.0f} µs, p99 {result['p99_us']:.0f} µs")
    return result


async def bench_append(url: str, root: Path) -> dict[str, Any]:
    from tether.sessions import JsonlBackend, SqliteSessionStore
    from tether_postgres import PostgresSessionStore
    from tether_redis import RedisSessionStore

    return {
        "jsonl_fsync": await _append_latency(JsonlBackend(str(root / "jsonl")), "jsonl (fsync)"),
        "jsonl_no_fsync": await _append_latency(
            JsonlBackend(str(root / "jsonl2"), durable=False), "jsonl (no fsync)"
        ),
        "sqlite": await _append_latency(SqliteSessionStore(str(root / "s.sqlite3")), "sqlite"),
        "postgres": await _append_latency(PostgresSessionStore(url), "postgres"),
        "redis": await _append_latency(
            RedisSessionStore(prefix=f"tether-bench-{new_id()[:8]}:"), "redis"
        ),
    }


# -- per-step overhead ------------------------------------------------------------------------
async def run_durably(prompt: str) -> Any:
    """Run ``prompt`` as a durable run of :data:`AGENT` in a session of its own, through
    this process's DBOS (started by ``start_worker``), and return the run's result."""
    from dbos import DBOS

    from tether_dbos.workflow import durable_run

    spec = {"session": f"durable-{new_id()[:8]}", "agent": AGENT,
            "prompt": Message.user(prompt).to_json()}  # fmt: skip
    handle = await DBOS.start_workflow_async(durable_run, spec)
    return await handle.get_result()


def bench_step_overhead(
    url: str, root: Path, *, rounds: int, repeats: int, sync: bool = True
) -> dict[str, Any]:
    import durable_bench_agent

    from tether_dbos import start_worker, stop_worker

    config = load_config(write_config(root, url, poll=0.2, sync=sync))
    runtime = start_worker(config, executor_id=f"bench-inprocess-{sync}")
    agent = durable_bench_agent.make_agent(config)
    prompt = f"rounds {rounds}"

    async def plain() -> float:
        started = time.perf_counter()
        result = await agent.run(prompt, session=f"plain-{new_id()[:8]}")
        assert result.output == "done" and result.tool_calls == rounds
        return time.perf_counter() - started

    async def durable() -> float:
        started = time.perf_counter()
        result = await run_durably(prompt)
        assert result.output == "done" and result.tool_calls == rounds
        return time.perf_counter() - started

    async def measure() -> tuple[list[float], list[float]]:
        await plain()
        await durable()  # warm both paths
        plains, durables = [], []
        for _ in range(repeats):  # alternate, so load changes hit both alike
            plains.append(await plain())
            durables.append(await durable())
        await agent.aclose()
        return plains, durables

    try:
        plains, durables = asyncio.run(measure())
    finally:
        stop_worker(runtime)
    steps = 2 * rounds + 1
    plain_s, durable_s = statistics.median(plains), statistics.median(durables)
    result = {
        "synchronous_commit": sync,
        "rounds": rounds,
        "steps": steps,
        "plain_ms_per_step": plain_s / steps * 1e3,
        "durable_ms_per_step": durable_s / steps * 1e3,
        "overhead_ms_per_step": (durable_s - plain_s) / steps * 1e3,
        "ratio": durable_s / plain_s,
    }
    log(
        f"step overhead (synchronous_commit {'on' if sync else 'off'}): plain {result['plain_ms_per_step']:.2f} ms/step, durable "
        f"{result['durable_ms_per_step']:.2f} ms/step: +{result['overhead_ms_per_step']:.2f} ms "
        f"per step, x{result['ratio']:.2f}"
    )
    return result


# -- queue throughput -------------------------------------------------------------------------
def bench_queue(workers: int, runs: int) -> float:
    with (
        temporary_database(prefix="tether_bench_queue") as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        root = Path(tmp)
        config = load_config(write_config(root, url))
        env = dict(os.environ, TETHER_CONFIG=str(root / "tether.toml"),
                   PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))  # fmt: skip
        processes = []
        try:
            for index in range(workers):
                process = subprocess.Popen(
                    [str(TETHER), "worker", "--id", f"bench-{index}"],
                    env=env, stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
                processes.append(process)
            for process in processes:  # wait until each says it is ready
                assert process.stderr is not None
                while "ready" not in (process.stderr.readline() or "ready"):
                    pass
            rate = asyncio.run(_through_queue(config, runs))
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)
    log(f"queue: {workers} worker(s): {rate:.1f} runs/s ({runs} runs)")
    return rate


async def _through_queue(config: Any, runs: int) -> float:
    from tether_dbos import DurableRuns

    async with DurableRuns(config) as client:
        started = time.perf_counter()
        handles = [await client.submit("rounds 1", agent=AGENT) for _ in range(runs)]
        results = await asyncio.gather(*(h.result() for h in handles))
        elapsed = time.perf_counter() - started
    assert all(r.output == "done" for r in results)
    return runs / elapsed


def main() -> None:
    rounds = int(os.environ.get("BENCH_ROUNDS", "20"))
    repeats = int(os.environ.get("BENCH_REPEATS", "5"))
    runs = int(os.environ.get("BENCH_RUNS", "200"))
    with temporary_database(prefix="tether_bench") as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        append = asyncio.run(bench_append(url, root))
        overhead = bench_step_overhead(url, root, rounds=rounds, repeats=repeats)
        overhead_async = bench_step_overhead(url, root, rounds=rounds, repeats=repeats, sync=False)
    queue = {f"{n}_workers_runs_per_s": bench_queue(n, runs) for n in (1, 3)}
    print(
        json.dumps(
            {
                "append": append,
                "step_overhead": overhead,
                "step_overhead_async_commit": overhead_async,
                "queue": queue,
            }
        )
    )


if __name__ == "__main__":
    main()
