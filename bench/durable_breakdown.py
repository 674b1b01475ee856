"""Where a durable step's time goes: one worker in this process, the run of
``durable_bench.py`` (``rounds`` tool rounds with an instant model and tool, on the
PostgreSQL session store), plain and durable alternately.

Run: ``python bench/durable_breakdown.py`` (PostgreSQL on 127.0.0.1:5432; it creates and
drops its own database). ``BENCH_ROUNDS`` (20), ``BENCH_REPEATS`` (5). Prints, per step
(model request or tool call) of the durable runs: wall time of the plain and the
durable run, process CPU time of each, DBOS's own floor (a workflow of as many empty
async steps, run alternately with the others), and for each database operation of a
durable step how often it happens and how long it takes:

- ``dbos check``: DBOS reads the step's recorded result (is this a replay?);
- ``dbos record``: DBOS commits the step's checkpoint;
- ``stream write``: a batch of events (and a model step's deltas) to the run's stream;
- ``session append``: one message to the session store (the plain loop does as many);
- ``pool checkouts``: connections DBOS takes from its pool (each was pinged before use
  until tether-dbos turned the ping off).

Works on any version of tether-dbos: operations it does not have are left out.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from durable_bench import run_durably, write_config  # noqa: E402

from tether.config import load_config  # noqa: E402
from tether.messages import new_id  # noqa: E402
from tether_postgres.testing import temporary_database  # noqa: E402

TOTALS: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()
MEASURING = [False]


def _timed(owner: Any, name: str, label: str) -> None:
    """Wrap ``owner.name`` (sync or async) to add its duration to ``label``."""
    function = getattr(owner, name, None) if owner is not None else None
    if function is None:
        return

    def record(started: float) -> None:
        if MEASURING[0]:
            TOTALS[label] += time.perf_counter() - started
            CALLS[label] += 1

    if asyncio.iscoroutinefunction(function):

        @functools.wraps(function)
        async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                record(started)

        setattr(owner, name, wrapped_async)
    else:

        @functools.wraps(function)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                record(started)

        setattr(owner, name, wrapped)


def _instrument() -> None:
    import sqlalchemy
    from dbos._sys_db import SystemDatabase
    from sqlalchemy import event

    from tether_postgres.store import PostgresSessionIO

    _timed(SystemDatabase, "check_operation_execution", "dbos check")
    _timed(SystemDatabase, "record_operation_result", "dbos record")
    _timed(SystemDatabase, "write_stream_from_step", "stream write")
    _timed(PostgresSessionIO, "append", "session append")

    @event.listens_for(sqlalchemy.pool.Pool, "checkout")
    def checkout(*_: Any) -> None:
        if MEASURING[0]:
            CALLS["pool checkouts"] += 1


def _empty_steps_workflow() -> Any:
    """A workflow of ``count`` empty async steps (registered before DBOS launches)."""
    from dbos import DBOS

    async def nothing() -> None:
        return None

    @DBOS.workflow(name="bench.empty_steps")
    async def empty_steps(count: int) -> None:
        for _ in range(count):
            await DBOS.run_step_async({"name": "empty"}, nothing)

    return empty_steps


def main() -> None:
    rounds = int(os.environ.get("BENCH_ROUNDS", "20"))
    repeats = int(os.environ.get("BENCH_REPEATS", "5"))
    _instrument()
    import durable_bench_agent

    from tether_dbos import start_worker, stop_worker

    steps = 2 * rounds + 1
    prompt = f"rounds {rounds}"
    cpu = {"plain": 0.0, "durable": 0.0, "empty": 0.0}
    empty_steps = _empty_steps_workflow()
    with temporary_database(prefix="tether_breakdown") as url, tempfile.TemporaryDirectory() as tmp:
        config = load_config(write_config(Path(tmp), url, poll=0.2))
        runtime = start_worker(config, executor_id="breakdown")
        agent = durable_bench_agent.make_agent(config)

        async def timed(kind: str, run: Callable[[], Any]) -> float:
            started, cpu_started = time.perf_counter(), time.process_time()
            await run()
            cpu[kind] += time.process_time() - cpu_started
            return time.perf_counter() - started

        async def plain() -> None:
            await agent.run(prompt, session=f"plain-{new_id()[:8]}")

        async def durable() -> None:
            await run_durably(prompt)

        async def empty() -> None:
            from dbos import DBOS

            handle = await DBOS.start_workflow_async(empty_steps, steps)
            await handle.get_result()

        async def measure() -> tuple[list[float], list[float], list[float]]:
            await plain()
            await durable()
            await empty()
            cpu["plain"] = cpu["durable"] = cpu["empty"] = 0.0
            plains, durables, empties = [], [], []
            for _ in range(repeats):
                plains.append(await timed("plain", plain))
                MEASURING[0] = True
                durables.append(await timed("durable", durable))
                MEASURING[0] = False
                empties.append(await timed("empty", empty))
            await agent.aclose()
            return plains, durables, empties

        try:
            plains, durables, empties = asyncio.run(measure())
        finally:
            stop_worker(runtime)
    n = repeats * steps
    plain_ms = statistics.median(plains) / steps * 1e3
    durable_ms = statistics.median(durables) / steps * 1e3
    empty_ms = statistics.median(empties) / steps * 1e3
    print(
        f"per step: plain {plain_ms:.2f} ms, durable {durable_ms:.2f} ms "
        f"(+{durable_ms - plain_ms:.2f} ms, x{durable_ms / plain_ms:.2f}); process CPU: plain "
        f"{cpu['plain'] / n * 1e3:.2f} ms, durable {cpu['durable'] / n * 1e3:.2f} ms"
    )
    print(
        f"  DBOS floor: an empty async step {empty_ms:.2f} ms "
        f"({cpu['empty'] / n * 1e3:.2f} ms CPU); durable minus plain minus that: "
        f"{durable_ms - plain_ms - empty_ms:+.2f} ms"
    )
    for label in ("dbos check", "dbos record", "stream write", "session append"):
        if CALLS[label]:
            print(
                f"  {label:15s} {CALLS[label] / n:5.2f} per step, "
                f"{TOTALS[label] / CALLS[label] * 1e3:6.2f} ms each"
            )
    print(f"  {'pool checkouts':15s} {CALLS['pool checkouts'] / n:5.2f} per step")


if __name__ == "__main__":
    main()
