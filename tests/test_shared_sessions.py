"""Agents on sessions kept in the shared stores (SQLite, PostgreSQL, Redis), chosen by
``[sessions] store``; and two workers on one conversation: one wins, the other gets
SessionConflictError, nothing interleaves."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.config import parse_config
from tether.errors import SessionLockedError
from tether.messages import new_id
from tether.sessions import close_session
from tether.sessions.repair import INTERRUPTED_ON_LOAD
from tether.testing import Reply, ScriptedProvider, assert_invariant, call
from tether_postgres.testing import temporary_database

STORES = ["sqlite", "postgres", "redis"]


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    with temporary_database(prefix="tether_shared_sessions") as dsn:
        yield dsn


@pytest.fixture
def store_config(
    request: pytest.FixtureRequest, session_store_section: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    return session_store_section(request.param)


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _agent(sessions: dict[str, Any], replies: list[Reply], **kwargs: Any) -> tether.Agent:
    config = parse_config({"sessions": sessions})
    return tether.Agent(ScriptedProvider(replies), tools=[add], config=config, **kwargs)


@pytest.mark.parametrize("store_config", STORES, indirect=True)
async def test_a_named_session_continues_across_agents(store_config: dict[str, Any]) -> None:
    name = f"conv-{new_id()[:8]}"
    first = _agent(
        store_config,
        [Reply(tool_calls=[call("add", a=2, b=3)]), Reply(text="5")],
        session=name,
    )
    result = await first.run("What is 2 + 3?")
    assert result.output == "5"
    await first.aclose()

    second = _agent(store_config, [Reply(text="You asked about 2 + 3.")])
    result = await second.run("What did I ask?", session=name)
    assert result.output == "You asked about 2 + 3."
    stored = await second.open_session(name, read_only=True)
    assert [m.role for m in stored.messages] == [
        "user", "assistant", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert_invariant(stored.messages)
    await close_session(stored)
    await second.session_store().remove(name)
    await second.aclose()


@pytest.mark.parametrize("store_config", STORES, indirect=True)
async def test_a_second_worker_is_refused_before_it_writes_while_the_first_is_in_a_tool(
    store_config: dict[str, Any],
) -> None:
    name = f"conv-{new_id()[:8]}"
    started, release = asyncio.Event(), asyncio.Event()

    @tether.tool
    async def slow_lookup(q: str) -> str:
        """Look something up, slowly."""
        started.set()
        await release.wait()
        return f"found {q}"

    def worker(text: str) -> tether.Agent:
        config = parse_config({"sessions": store_config})
        replies = [Reply(tool_calls=[call("slow_lookup", q=text)]), Reply(text=f"done {text}")]
        return tether.Agent(ScriptedProvider(replies), tools=[slow_lookup], config=config)

    a, b = worker("a"), worker("b")
    run_a = asyncio.create_task(a.run("question a", session=name))
    await started.wait()  # a is in the middle of its run, inside a tool call
    with pytest.raises(SessionLockedError):
        await b.run("question b", session=name)
    release.set()
    result = await run_a
    assert result.output == "done a"

    reader = await a.open_session(name, read_only=True)
    texts = [m.text for m in reader.messages if m.role != "tool"]
    assert texts == ["question a", "", "done a"]  # nothing of b's
    results = [r for m in reader.messages for r in m.tool_results]
    assert [(r.is_error, r.text) for r in results] == [(False, "found a")]
    assert_invariant(reader.messages)
    await close_session(reader)
    # a's run is over: b's next run gets the session.
    result = await b.run("question b", session=name)
    assert result.output == "done b"
    await a.session_store().remove(name)
    await a.aclose()
    await b.aclose()


WORKER = Path(__file__).with_name("session_worker.py")
RUNS = 40


@pytest.mark.parametrize("store_config", STORES, indirect=True)
async def test_two_processes_sharing_a_session_never_break_each_others_runs(
    store_config: dict[str, Any],
) -> None:
    """Two worker processes, 40 runs each, on one session: every run completes or is
    refused before it writes; no run is broken, no call answered for a live worker.
    Worker "a" is refused while "b" has the session; "b" queues for it
    (``lease_wait_s``), so all of b's runs complete."""
    name = f"shared-{new_id()[:8]}"
    queueing = {**store_config, "settings": {**store_config["settings"], "lease_wait_s": 15}}
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable, str(WORKER), json.dumps(config), name, label, str(RUNS),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for label, config in (("a", store_config), ("b", queueing))
    ]  # fmt: skip
    reports = []
    for worker in workers:
        out, err = await asyncio.wait_for(worker.communicate(), timeout=120)
        assert worker.returncode == 0, err.decode()
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    completed = [prompt for report in reports for prompt in report["completed"]]
    assert [report["other"] for report in reports] == [[], []]  # completed or refused, only
    assert len(completed) + sum(report["refused"] for report in reports) == 2 * RUNS
    assert reports[1]["refused"] == 0 and len(reports[1]["completed"]) == RUNS

    agent = _agent(store_config, [])
    reader = await agent.open_session(name, read_only=True)
    history = list(reader.messages)
    await close_session(reader)
    assert_invariant(history)
    # Exactly the completed runs are in the history, each whole: the prompt, the call,
    # its real result, the answer. A refused run left nothing behind.
    prompts = [m.text for m in history if m.role == "user"]
    assert sorted(prompts) == sorted(completed)
    results = [r for m in history for r in m.tool_results]
    assert len(results) == len(completed)
    assert all(not r.is_error and r.text.startswith("worked on") for r in results)
    assert INTERRUPTED_ON_LOAD not in json.dumps([m.to_json() for m in history])
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * len(completed)
    await agent.session_store().remove(name)
    await agent.aclose()


_DIES_IN_A_TOOL_CALL = """
import asyncio, json, os, sys
import tether
from tether.config import parse_config
from tether.messages import Message, TextBlock, ToolCallBlock
from tether.testing import ScriptedProvider

async def main():
    config = parse_config({"sessions": json.loads(sys.argv[1])})
    store = tether.Agent(ScriptedProvider([]), config=config).session_store()
    session = await store.open(sys.argv[2])
    await session.append(Message.user("look it up"))
    await session.append(Message(role="assistant", content=[
        TextBlock(text="Looking."), ToolCallBlock(id="c1", name="lookup", arguments={})]))
    print("in the tool call", flush=True)
    os._exit(0)  # dies mid-call: no result, no release

asyncio.run(main())
"""


@pytest.mark.parametrize("store_config", STORES, indirect=True)
async def test_a_live_writers_lease_holds_past_its_ttl_and_a_dead_ones_expires(
    store_config: dict[str, Any],
) -> None:
    """A writer alive past lease_ttl_s keeps the session (its lease is renewed); the call
    in flight of a writer that died is answered, once its lease has expired."""
    name = f"lease-{new_id()[:8]}"
    short = {**store_config, "settings": {**store_config["settings"], "lease_ttl_s": 0.4}}
    agent = _agent(short, [])
    store = agent.session_store()
    live = await store.open(name)
    await asyncio.sleep(1.0)  # well past the ttl: only renewal keeps the lease
    with pytest.raises(SessionLockedError):
        await store.open(name)
    await close_session(live)

    dying = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _DIES_IN_A_TOOL_CALL, json.dumps(short), name,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(dying.communicate(), timeout=60)
    assert b"in the tool call" in out, err.decode()
    waiting = _agent(
        {**short, "settings": {**short["settings"], "lease_wait_s": 10}}, []
    ).session_store()
    session = await waiting.open(name)  # waits for the dead writer's lease to expire
    results = session.messages[-1].tool_results
    assert [(r.call_id, r.is_error) for r in results] == [("c1", True)]
    assert INTERRUPTED_ON_LOAD in results[0].text
    assert_invariant(session.messages)
    await close_session(session)
    await waiting.aclose()
    await store.remove(name)
    await agent.aclose()
