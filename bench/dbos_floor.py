"""What DBOS itself costs per step, before tether adds anything.

Run: ``python bench/dbos_floor.py`` (PostgreSQL on 127.0.0.1:5432; it creates and drops
its own database). ``BENCH_CALLS`` (500) calls per measurement. DBOS is launched in this
process as a tether worker (``start_worker``, so with tether-dbos's engine settings).
Prints progress on stderr and one JSON line on stdout, each figure in ms per call:

- ``direct``: ``check_operation_execution`` (is this step recorded? BEGIN, two SELECTs,
  COMMIT) and ``record_operation_result`` (the checkpoint: BEGIN, INSERT, COMMIT; inside
  a run DBOS also locks the run's status row first) called in a loop from this thread,
  with the thread's CPU time: the cost of the calls alone.
- ``to_thread``: the same calls through ``asyncio.to_thread`` from an idle event loop,
  as DBOS makes them during an async step.
- ``to_thread_busy_loop``: the same while another task keeps the event loop busy in
  0.2 ms slices (a worker executing other runs): the calls' thread then waits for the
  interpreter lock at each round trip.
- ``empty_step``: one empty async step (``DBOS.run_step_async``) inside a workflow, wall
  and process CPU time: DBOS's floor for a durable model request or tool call.
- ``*_sync_commit_off``: the same two in-run figures with ``synchronous_commit = false``.
"""

from __future__ import annotations

import asyncio
import json
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

from durable_bench import write_config  # noqa: E402

from tether.config import load_config  # noqa: E402
from tether_postgres.testing import temporary_database  # noqa: E402

CALLS = int(os.environ.get("BENCH_CALLS", "500"))


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _output(workflow_id: str, function_id: int) -> dict[str, Any]:
    return {
        "workflow_uuid": workflow_id,
        "function_id": function_id,
        "function_name": "floor",
        "output": "1",
        "error": None,
        "serialization": None,
        "started_at_epoch_ms": 0,
        "child_workflow_id": None,
    }


def _per_call(run: Callable[[int], None], first: int) -> tuple[float, float]:
    """Wall and thread CPU ms per call of ``run(function_id)``."""
    started, cpu = time.perf_counter(), time.thread_time()
    for n in range(CALLS):
        run(first + n)
    return (
        (time.perf_counter() - started) / CALLS * 1e3,
        (time.thread_time() - cpu) / CALLS * 1e3,
    )


async def _through_thread(sys_db: Any, workflow_id: str, first: int) -> dict[str, float]:
    result = {}
    started = time.perf_counter()
    for n in range(CALLS):
        await asyncio.to_thread(sys_db.check_operation_execution, workflow_id, first + n, "floor")
    result["check_ms"] = (time.perf_counter() - started) / CALLS * 1e3
    started = time.perf_counter()
    for n in range(CALLS):
        await asyncio.to_thread(sys_db.record_operation_result, _output(workflow_id, first + n))
    result["record_ms"] = (time.perf_counter() - started) / CALLS * 1e3
    return result


async def _busy_loop(stop: asyncio.Event) -> None:
    while not stop.is_set():
        until = time.perf_counter() + 0.0002
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


def bench(sync: bool) -> dict[str, Any]:
    from dbos import DBOS

    from tether_dbos import start_worker, stop_worker

    async def empty() -> int:
        return 1

    @DBOS.workflow(name=f"bench.floor.steps.{sync}")
    async def steps(count: int) -> list[tuple[float, float]]:
        times = []
        for _ in range(count):
            started, cpu = time.perf_counter(), time.process_time()
            await DBOS.run_step_async({"name": "empty"}, empty)
            times.append((time.perf_counter() - started, time.process_time() - cpu))
        return times

    @DBOS.workflow(name=f"bench.floor.target.{sync}")
    async def target() -> int:
        return 1

    with (
        temporary_database(prefix="tether_floor") as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        config = load_config(write_config(Path(tmp), url, poll=0.2, sync=sync))
        runtime = start_worker(config, executor_id=f"floor-{sync}")
        try:
            from dbos._dbos import _get_dbos_instance  # the calls measured are DBOS's own

            sys_db = _get_dbos_instance()._sys_db
            handle = DBOS.start_workflow(target)
            handle.get_result()
            workflow_id = handle.workflow_id

            def check(n: int) -> None:
                sys_db.check_operation_execution(workflow_id, n, "floor")

            def record(n: int) -> None:
                sys_db.record_operation_result(_output(workflow_id, n))

            _per_call(check, 0)  # warm: connections, prepared statements
            check_wall, check_cpu = _per_call(check, 1_000_000)
            record_wall, record_cpu = _per_call(record, 1_000_000)

            async def measure() -> dict[str, Any]:
                idle = await _through_thread(sys_db, workflow_id, 2_000_000)
                stop = asyncio.Event()
                busy = asyncio.create_task(_busy_loop(stop))
                loaded = await _through_thread(sys_db, workflow_id, 3_000_000)
                stop.set()
                await busy
                handle = await DBOS.start_workflow_async(steps, 20)
                await handle.get_result()  # warm
                handle = await DBOS.start_workflow_async(steps, CALLS)
                times = await handle.get_result()
                return {
                    "to_thread": idle,
                    "to_thread_busy_loop": loaded,
                    "empty_step": {
                        "wall_ms": statistics.median(t for t, _ in times) * 1e3,
                        "cpu_ms": statistics.mean(c for _, c in times) * 1e3,
                    },
                }

            result: dict[str, Any] = {
                "direct": {
                    "check_ms": check_wall,
                    "check_cpu_ms": check_cpu,
                    "record_ms": record_wall,
                    "record_cpu_ms": record_cpu,
                },
                **asyncio.run(measure()),
            }
        finally:
            stop_worker(runtime)
    label = "on" if sync else "off"
    direct, thread, busy, step = (
        result["direct"],
        result["to_thread"],
        result["to_thread_busy_loop"],
        result["empty_step"],
    )
    log(
        f"synchronous_commit {label}: direct check {direct['check_ms']:.2f} ms "
        f"({direct['check_cpu_ms']:.2f} CPU), record {direct['record_ms']:.2f} ms "
        f"({direct['record_cpu_ms']:.2f} CPU); to_thread check {thread['check_ms']:.2f}, "
        f"record {thread['record_ms']:.2f}; busy loop check {busy['check_ms']:.2f}, record "
        f"{busy['record_ms']:.2f}; empty step {step['wall_ms']:.2f} ms ({step['cpu_ms']:.2f} CPU)"
    )
    return result


def main() -> None:
    on = bench(True)
    off = bench(False)
    print(
        json.dumps(
            {
                **on,
                "to_thread_sync_commit_off": off["to_thread"],
                "empty_step_sync_commit_off": off["empty_step"],
            }
        )
    )


if __name__ == "__main__":
    main()
