"""50 durable runs, 3 worker processes on the real PostgreSQL, one worker SIGKILLed inside
a tool call and one inside a model call: every run completes exactly once, no finished
model call or tool call is repeated, the tool's side effect happens once per call (it
deduplicates on the idempotency key, which is the step's identity), and every history
satisfies the invariant."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from tether.result import Outcome
from tether.sessions import close_session
from tether.testing import assert_invariant
from tether_dbos import DurableRuns
from tether_postgres import PostgresSessionStore

RUNS = 50
SLOW_TOOL, SLOW_MODEL = 7, 13
AGENT = "durable_agents:make_agent"


def test_runs_survive_workers_killed_mid_tool_and_mid_model(deployment: Any) -> None:
    root = deployment.root
    wait_for = deployment.wait_for

    async def scenario() -> None:
        async with DurableRuns(deployment.config()) as runs:
            handles = await deployment.submit_tasks(runs, RUNS, SLOW_TOOL, SLOW_MODEL, AGENT)
            fast = [h for i, h in enumerate(handles) if i not in (SLOW_TOOL, SLOW_MODEL)]
            results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in fast)), 90)
            assert all(r.outcome is Outcome.COMPLETED for r in results)

            # Run 7 is inside its tool call (after its side effect), run 13 inside its
            # first model call: kill the worker holding each, then restart it.
            pid = wait_for(
                lambda: deployment.holder("tool", SLOW_TOOL), timeout=60, what="the tool"
            )
            victim = deployment.worker_with_pid(int(pid))  # type: ignore[arg-type]
            deployment.kill(victim)
            (root / "markers" / f"release-task_{SLOW_TOOL}").write_text("")
            for marker in (root / "markers").glob(f"*-task_{SLOW_MODEL}.{pid}"):
                marker.unlink()  # that worker also held run 13; its restart re-enters the step
            deployment.start(victim)
            # Run 7 finishes before the next kill, which must interrupt run 13's model call
            # alone (not run 7's last model call, on a worker holding both).
            await asyncio.wait_for(handles[SLOW_TOOL].result(), 90)

            pid = wait_for(
                lambda: deployment.holder("model", SLOW_MODEL), timeout=60, what="the model"
            )
            victim = deployment.worker_with_pid(int(pid))  # type: ignore[arg-type]
            deployment.kill(victim)
            (root / "markers" / f"release-task_{SLOW_MODEL}").write_text("")
            deployment.start(victim)
            final = await asyncio.wait_for(
                asyncio.gather(*(handles[i].result() for i in (SLOW_TOOL, SLOW_MODEL))), 90
            )
            assert [r.output for r in final] == [
                f"done task {SLOW_TOOL}",
                f"done task {SLOW_MODEL}",
            ]
            for handle in handles:  # each run ended once: one Done on its event stream
                events = [e async for e in handle.events(idle_timeout_s=10)]
                assert [e["type"] for e in events].count("done") == 1
                assert await handle.status() == "SUCCESS"
        store = PostgresSessionStore(deployment.url)
        try:
            for index in range(RUNS):
                session = await store.open(f"conversation-{index}", read_only=True)
                assert_invariant(session.messages)
                assert [m.role for m in session.messages] == [
                    "user",
                    "assistant",
                    "tool",
                    "assistant",
                ]
                assert session.messages[-1].text == f"done task {index}"
                await close_session(session)
        finally:
            await store.aclose()

    asyncio.run(scenario())

    # The side effect happened exactly once per run, though run 7's tool ran twice.
    ledger = deployment.lines("ledger")
    assert sorted(text for _, text in ledger) == sorted(f"task {i}" for i in range(RUNS))
    assert len({key for key, _ in ledger}) == RUNS
    invocations = Counter(text for _, text in deployment.lines("invocations"))
    assert invocations[f"task {SLOW_TOOL}"] == 2  # killed inside it, so executed again
    assert all(invocations[f"task {i}"] == 1 for i in range(RUNS) if i != SLOW_TOOL)
    # No finished model call was made again: only the one the kill interrupted.
    calls = Counter((task, kind) for task, kind in deployment.lines("model_calls"))
    for i in range(RUNS):
        assert calls[(f"task {i}", "final")] == 1
        if i != SLOW_MODEL:
            assert calls[(f"task {i}", "first")] == 1, i
    assert calls[(f"task {SLOW_MODEL}", "first")] >= 2
