"""Takeover of a dead worker's runs: 3 worker processes on the real PostgreSQL, one
SIGKILLed inside a tool call and never restarted; the two survivors take over its runs
after ``takeover_after_s`` and finish every run exactly once. And the heartbeat table's
guard: two live workers never recover the same dead peer."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import psycopg
from dbos import DBOSClient

from tether.result import Outcome
from tether_dbos import DurableRuns
from tether_dbos.takeover import Heartbeat
from tether_postgres.testing import temporary_database

RUNS = 30
SLOW_TOOL, SLOW_MODEL = 4, 11
AGENT = "durable_agents:make_agent"
TAKEOVER_AFTER_S = 2  # as in the takeover_deployment fixture


def test_survivors_take_over_the_runs_of_a_killed_worker(takeover_deployment: Any) -> None:
    deployment = takeover_deployment
    root = deployment.root
    wait_for = deployment.wait_for

    async def scenario() -> tuple[str, str]:
        async with DurableRuns(deployment.config()) as runs:
            handles = await deployment.submit_tasks(runs, RUNS, SLOW_TOOL, SLOW_MODEL, AGENT)
            fast = [h for i, h in enumerate(handles) if i not in (SLOW_TOOL, SLOW_MODEL)]
            await asyncio.wait_for(asyncio.gather(*(h.result() for h in fast)), 90)
            # Both slow runs are inside their step; kill the worker inside the tool call
            # (after its side effect). It is never restarted.
            tool_pid = wait_for(
                lambda: deployment.holder("tool", SLOW_TOOL), timeout=60, what="tool"
            )
            wait_for(lambda: deployment.holder("model", SLOW_MODEL), timeout=60, what="model")
            victim = deployment.worker_with_pid(int(tool_pid))  # type: ignore[arg-type]
            deployment.kill(victim)
            killed_at = time.monotonic()
            for path in (root / "markers").glob(f"*.{tool_pid}"):
                path.unlink()  # so a re-execution's marker names its survivor
            (root / "markers" / f"release-task_{SLOW_TOOL}").write_text("")
            (root / "markers" / f"release-task_{SLOW_MODEL}").write_text("")
            results = await asyncio.wait_for(
                asyncio.gather(*(h.result() for h in handles)), TAKEOVER_AFTER_S + 60
            )
            elapsed = time.monotonic() - killed_at
            assert all(r.outcome is Outcome.COMPLETED for r in results)
            assert [r.output for r in results] == [f"done task {i}" for i in range(RUNS)]
            assert elapsed < TAKEOVER_AFTER_S + 30, elapsed
            for handle in handles:
                assert await handle.status() == "SUCCESS"
                events = [e async for e in handle.events(idle_timeout_s=10)]
                assert [e["type"] for e in events].count("done") == 1
        return victim, handles[SLOW_TOOL].run_id

    victim, slow_run = asyncio.run(scenario())
    assert deployment.workers[victim].poll() is not None  # still dead: nobody restarted it

    client = DBOSClient(system_database_url=deployment.url)
    try:
        executors = {
            w.workflow_id: w.executor_id
            for w in client.list_workflows(name="tether.run", load_input=False, load_output=False)
        }
    finally:
        client.destroy()
    with psycopg.connect(deployment.url) as conn:
        taken_by = conn.execute(
            "SELECT taken_over_by FROM tether.tether_workers WHERE executor_id = %s", (victim,)
        ).fetchone()
    assert taken_by is not None and taken_by[0] in {"w1", "w2", "w3"} - {victim}
    assert len(executors) == RUNS
    survivors = {"w1", "w2", "w3"} - {victim}
    ledger = deployment.lines("ledger")
    assert sorted(text for _, text in ledger) == sorted(f"task {i}" for i in range(RUNS))
    assert len({key for key, _ in ledger}) == RUNS  # each side effect once
    invocations = Counter(text for _, text in deployment.lines("invocations"))
    assert invocations[f"task {SLOW_TOOL}"] == 2  # killed inside it, executed again...
    keys = {key for key, text in deployment.lines("invocations") if text == f"task {SLOW_TOOL}"}
    assert len(keys) == 1  # ...with the same idempotency key
    assert all(invocations[f"task {i}"] == 1 for i in range(RUNS) if i != SLOW_TOOL)
    calls = Counter((task, kind) for task, kind in deployment.lines("model_calls"))
    for i in range(RUNS):
        assert calls[(f"task {i}", "final")] == 1, i
        if i not in (SLOW_TOOL, SLOW_MODEL):
            assert calls[(f"task {i}", "first")] == 1, i
    assert executors[slow_run] in survivors  # the killed run finished on a survivor


def test_two_live_workers_never_recover_the_same_dead_peer() -> None:
    with temporary_database(prefix="tether_takeover") as url:
        recovered: list[tuple[str, str]] = []
        lock = threading.Lock()

        def recover_as(me: str) -> Any:
            def recover(peer: str) -> int:
                with lock:
                    recovered.append((me, peer))
                time.sleep(0.3)  # a slow recovery: the other worker beats meanwhile
                return 0

            return recover

        def heartbeat(name: str) -> Heartbeat:
            return Heartbeat(
                url, schema="tether", executor_id=name, takeover_after_s=60,
                recover=recover_as(name),
            )  # fmt: skip

        def silence(name: str) -> None:  # its last heartbeat was an hour ago
            with psycopg.connect(url) as conn:
                conn.execute(
                    "UPDATE tether.tether_workers SET heartbeat_at = now() - interval '1 hour' "
                    "WHERE executor_id = %s",
                    (name,),
                )

        dead, a, b = heartbeat("dead"), heartbeat("a"), heartbeat("b")
        for worker in (dead, a, b):
            worker.register()
        try:
            assert a.beat() == [] and b.beat() == []  # everybody is alive
            silence("dead")
            barrier = threading.Barrier(2)
            taken: dict[str, list[str]] = {}

            def beat(worker: Heartbeat) -> None:
                barrier.wait()
                taken[worker.executor_id] = worker._take_over()

            threads = [threading.Thread(target=beat, args=(w,)) for w in (a, b)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=10)
            assert sorted(taken["a"] + taken["b"]) == ["dead"]
            assert [peer for _, peer in recovered] == ["dead"]
            assert a.beat() == [] and b.beat() == []  # taken over once, not again

            dead.register()  # the same id comes back: it beats again and can be taken over again
            with psycopg.connect(url) as conn:
                row = conn.execute(
                    "SELECT taken_over_by FROM tether.tether_workers WHERE executor_id = 'dead'"
                ).fetchone()
            assert row == (None,)
            dead.stop(release=True)  # a clean stop: taken over at the next beat
            assert a.beat() + b.beat() == ["dead"]
        finally:
            a.stop(release=False)
            b.stop(release=False)
