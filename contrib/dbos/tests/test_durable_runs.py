"""Durable runs on one worker process and the real PostgreSQL: streamed events, a run
that waits for a reply across a worker restart, cancellation, limits, a conflict with
another writer of the session, and ``tether submit``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.errors import RunCancelled, SessionConflictError
from tether.messages import Message
from tether.result import Outcome
from tether.sessions import append_message, close_session
from tether.testing import assert_invariant
from tether_dbos import DurableRuns
from tether_postgres import PostgresSessionStore

AGENT = "durable_agents:make_agent"
TETHER = Path(sys.executable).with_name("tether")


def _release(deployment: Any, task: int) -> None:
    (deployment.root / "markers").mkdir(exist_ok=True)
    (deployment.root / "markers" / f"release-task_{task}").write_text("")


def _held(deployment: Any, kind: str, task: int) -> object:
    return deployment.wait_for(
        lambda: list((deployment.root / "markers").glob(f"{kind}-task_{task}.*")),
        timeout=60,
        what=f"task {task} to be inside its {kind} step",
    )


async def _history(deployment: Any, session: str) -> list[Message]:
    store = PostgresSessionStore(deployment.url)
    try:
        # A writer: repairs what the run left. A cancelled run's last journal write (the
        # interrupted call's answer) may land just after its result is known; the open
        # then meets a newer version and is refused whole, so open again (bounded).
        for _ in range(50):
            try:
                opened = await store.open(session)
                break
            except SessionConflictError:
                await asyncio.sleep(0.1)
        else:
            opened = await store.open(session)
        messages = list(opened.messages)
        await close_session(opened)
        return messages
    finally:
        await store.aclose()


def test_events_stream_in_order_and_the_result_arrives(shared_deployment: Any) -> None:
    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit("task 1", agent=AGENT, session="events-1")
            events = [e async for e in handle.events(idle_timeout_s=60)]
            result = await handle.result()
            assert result.outcome is Outcome.COMPLETED and result.output == "done task 1"
            assert [e["type"] for e in events] == [
                "run_start", "text_delta", "turn_end", "tool_start", "tool_end",
                "text_delta", "turn_end", "done",
            ]  # fmt: skip
            assert events[1]["text"] == "Working on task 1. "
            assert events[-1]["output"] == "done task 1"
            assert await handle.status() == "SUCCESS"
            assert_invariant(await _history(shared_deployment, "events-1"))

    asyncio.run(scenario())


def test_a_run_waits_for_a_reply_across_a_worker_restart(shared_deployment: Any) -> None:
    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit(
                "task 2", agent=AGENT, session="reply-2", wait_for_reply_s=120
            )
            events = handle.events(idle_timeout_s=60)
            async for event in events:
                if event["type"] == "done":
                    break
            await events.aclose()
            assert await handle.status() == "PENDING"  # waiting for the reply
            shared_deployment.kill("w1")
            shared_deployment.start("w1")
            await handle.reply("task 3")
            events = handle.events(idle_timeout_s=60)
            done = 0
            async for event in events:  # from the start: the first turn's Done, then ours
                done += event["type"] == "done"
                if done == 2:
                    break
            await events.aclose()
            await handle.end()
            result = await handle.result()
            assert result.output == "done task 3"
            history = await _history(shared_deployment, "reply-2")
            assert [m.text for m in history if m.role == "user"] == ["task 2", "task 3"]
            assert len(history) == 8
            assert_invariant(history)
            done = [e async for e in handle.events(idle_timeout_s=10) if e["type"] == "done"]
            assert len(done) == 2

    asyncio.run(scenario())


def test_a_cancelled_run_stops_and_its_history_is_repaired(shared_deployment: Any) -> None:
    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit("task 4 slow-tool", agent=AGENT, session="cancel-4")
            await asyncio.to_thread(_held, shared_deployment, "tool", 4)
            await handle.cancel()
            _release(shared_deployment, 4)
            with pytest.raises(RunCancelled):
                await handle.result()
            assert await handle.status() == "CANCELLED"
            history = await _history(shared_deployment, "cancel-4")
            assert_invariant(history)
            assert history[-1].role == "tool" and history[-1].tool_results[0].is_error
            assert "done task 4" not in [m.text for m in history]

    asyncio.run(scenario())


def test_limits_end_a_durable_run_with_their_outcome(shared_deployment: Any) -> None:
    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit(
                "task 5", agent=AGENT, session="limit-5", limits={"max_turns": 1}
            )
            result = await handle.result()
            assert result.outcome is Outcome.LIMIT and result.turns == 1
            assert_invariant(await _history(shared_deployment, "limit-5"))

    asyncio.run(scenario())


def test_another_writer_of_the_session_makes_the_run_fail_without_interleaving(
    shared_deployment: Any,
) -> None:
    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit("task 6 slow-tool", agent=AGENT, session="conflict-6")
            await asyncio.to_thread(_held, shared_deployment, "tool", 6)
            store = PostgresSessionStore(shared_deployment.url)
            other = await store.open("conflict-6")
            await append_message(other, Message.user("written by someone else"))
            await close_session(other)
            await store.aclose()
            _release(shared_deployment, 6)
            with pytest.raises(SessionConflictError):
                await handle.result()
            history = await _history(shared_deployment, "conflict-6")
            texts = [m.text for m in history if m.role != "tool"]
            assert texts == ["task 6 slow-tool", "Working on task 6. ", "written by someone else"]
            assert_invariant(history)

    asyncio.run(scenario())


def test_tether_submit_streams_the_run_and_prints_its_outcome(shared_deployment: Any) -> None:
    process = subprocess.run(
        [str(TETHER), "submit", "task 7", "--agent", AGENT, "--session", "cli-7"],
        env=shared_deployment.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    assert process.stdout == "Working on task 7. done task 7\n"
    assert "[completed] 2 turns, 1 tool calls" in process.stderr

    as_json = subprocess.run(
        [str(TETHER), "submit", "task 8", "--agent", AGENT, "--json"],
        env=shared_deployment.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    lines = as_json.stdout.splitlines()
    assert lines[0].startswith("run-")
    assert json.loads(lines[-1])["type"] == "done"


def test_a_run_suspended_for_approval_waits_across_a_worker_restart(
    shared_deployment: Any,
) -> None:
    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit(
                "task 9", agent="durable_agents:make_cautious_agent", session="approve-9"
            )
            events = handle.events(idle_timeout_s=60)
            async for event in events:
                if event["type"] == "done":
                    break
            await events.aclose()
            assert event["outcome"] == "suspended"
            assert [p["call_id"] for p in event["pending"]] == ["call-task-9"]
            assert await handle.status() == "PENDING"
            ledger = shared_deployment.root / "ledger"
            assert "task 9" not in (ledger.read_text() if ledger.exists() else "")
            shared_deployment.kill("w1")
            shared_deployment.start("w1")
            await handle.approve({"call-task-9": True})
            result = await handle.result()
            assert result.outcome is Outcome.COMPLETED and result.output == "done task 9"
            assert ledger.read_text().count("\ttask 9\n") == 1
            assert_invariant(await _history(shared_deployment, "approve-9"))

    asyncio.run(scenario())


def test_a_worker_outlives_the_loss_of_its_database_connections(shared_deployment: Any) -> None:
    """DBOS's pooled connections are not pinged before use (a round trip per checkout):
    after they are cut, as by a database restart, the next run still goes through."""
    import psycopg

    with psycopg.connect(shared_deployment.url, autocommit=True) as conn:
        cut = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = 'tether_dbos'"
        ).fetchone()
    assert cut is not None and cut[0] >= 1

    async def scenario() -> None:
        async with DurableRuns(shared_deployment.config()) as runs:
            handle = await runs.submit("task 10", agent=AGENT, session="reconnect-10")
            result = await asyncio.wait_for(handle.result(), 60)
            assert result.output == "done task 10"

    asyncio.run(scenario())
