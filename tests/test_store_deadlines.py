"""Every wait on a shared session store ends by the run's deadline, against the real
PostgreSQL and Redis servers behind a fault-injecting proxy (stall, slow, cut) and
with a row lock held by another client; cancelling returns at once; the first run
after a server restart succeeds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

import tether
from tether.config import parse_config
from tether.errors import SessionTimeoutError, WallTimeExceeded
from tether.messages import new_id
from tether.testing import Reply, ScriptedProvider, assert_invariant, call
from tether_postgres.testing import temporary_database
from tether_testing.fault_proxy import FaultProxy

WALL = 1.5
"""The runs' wall-time limit: each must end by WALL + 1 s, whatever the store does."""
ENDED_BY = WALL + 1.0

STORES = ["postgres", "redis"]


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    with temporary_database(prefix="tether_deadlines") as dsn:
        yield dsn


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    import redis

    prefix = f"tether-deadlines-{new_id()[:10]}:"
    yield prefix
    client = redis.Redis()
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def proxy(request: pytest.FixtureRequest) -> Iterator[FaultProxy]:
    port = 5432 if request.node.callspec.params.get("kind") == "postgres" else 6379
    with FaultProxy("127.0.0.1", port) as running:
        yield running


def _sessions(kind: str, proxy: FaultProxy, request: pytest.FixtureRequest) -> dict[str, Any]:
    if kind == "postgres":
        parts = urlsplit(request.getfixturevalue("pg_database"))
        netloc = parts.netloc.rsplit(":", 1)[0] + f":{proxy.port}"
        dsn = urlunsplit(parts._replace(netloc=netloc))
        return {"store": "postgres", "settings": {"dsn": dsn, "max_connections": 4}}
    prefix = request.getfixturevalue("redis_prefix")
    url = f"redis://127.0.0.1:{proxy.port}/0"
    return {"store": "redis", "settings": {"url": url, "prefix": prefix}}


def _agent(
    sessions: dict[str, Any], tools: list[Any], *, wall: float | None = WALL
) -> tether.Agent:
    replies = []
    for _ in range(4):
        replies += [Reply(tool_calls=[call("work", q="x")]), Reply(text="done")]
    config = parse_config({"sessions": sessions, "limits": {"wall_time_s": wall}})
    return tether.Agent(ScriptedProvider(replies), tools=tools, config=config)


async def _ending(agent: tether.Agent, name: str) -> tuple[BaseException | None, float]:
    """The error a run ended with (raised, or carried by its result) and how long it took."""
    started = time.monotonic()
    try:
        result = await agent.run("go", session=name)
    except tether.TetherError as exc:
        return exc, time.monotonic() - started
    return result.error, time.monotonic() - started


async def _history(agent: tether.Agent, name: str) -> list[Any]:
    reader = await agent.open_session(name, read_only=True)
    messages = list(reader.messages)
    await tether.sessions.close_session(reader)
    return messages


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("fault", ["stall at open", "stall in a tool", "slow"])
async def test_a_store_that_stalls_or_crawls_ends_the_run_by_its_deadline(
    kind: str, fault: str, proxy: FaultProxy, request: pytest.FixtureRequest
) -> None:
    @tether.tool
    def work(q: str) -> str:
        """Do the work."""
        if fault == "stall in a tool":
            proxy.stall()
        return "worked"

    agent = _agent(_sessions(kind, proxy, request), [work])
    name = f"stall-{new_id()[:8]}"
    if fault == "stall in a tool":
        # The first run warms the store up (tables, pool); its tool then stalls the store.
        pass
    else:
        error, _ = await _ending(agent, name)  # a healthy run first
        assert error is None
        if fault == "stall at open":
            proxy.stall()
        else:
            proxy.slow(0.4)
    error, elapsed = await _ending(agent, name)
    assert isinstance(error, SessionTimeoutError | WallTimeExceeded), error
    assert elapsed < ENDED_BY, f"the run took {elapsed:.1f} s with wall_time_s = {WALL}"
    proxy.heal()
    await agent.aclose()


@pytest.mark.parametrize("kind", ["postgres"])
@pytest.mark.parametrize("when", ["before the run", "during a tool call"])
async def test_a_row_lock_held_by_another_client_ends_the_run_by_its_deadline(
    kind: str, when: str, proxy: FaultProxy, request: pytest.FixtureRequest, pg_database: str
) -> None:
    name = f"locked-{new_id()[:8]}"
    holder = psycopg.connect(pg_database)  # directly, not through the proxy

    def hold_the_row() -> None:
        holder.execute("SELECT 1 FROM tether_sessions WHERE name = %s FOR UPDATE", (name,))

    @tether.tool
    def work(q: str) -> str:
        """Do the work."""
        if when == "during a tool call":
            hold_the_row()
        return "worked"

    agent = _agent(_sessions(kind, proxy, request), [work])
    try:
        session = await agent.open_session(name)  # create it (and the tables)
        await tether.sessions.close_session(session)
        if when == "before the run":
            hold_the_row()
        error, elapsed = await _ending(agent, name)
        assert isinstance(error, SessionTimeoutError), error
        assert elapsed < ENDED_BY, f"the run took {elapsed:.1f} s with wall_time_s = {WALL}"
    finally:
        holder.rollback()
        holder.close()
    # The lock is gone: the session is usable again, its history valid.
    error, _ = await _ending(agent, name)
    assert error is None
    assert_invariant(await _history(agent, name))
    await agent.aclose()


@pytest.mark.parametrize("kind", STORES)
async def test_cancelling_a_run_stuck_on_a_stalled_store_returns_at_once(
    kind: str, proxy: FaultProxy, request: pytest.FixtureRequest
) -> None:
    stalled = asyncio.Event()
    loop = asyncio.get_running_loop()

    @tether.tool
    def work(q: str) -> str:
        """Do the work."""
        proxy.stall()
        loop.call_soon_threadsafe(stalled.set)
        return "worked"

    agent = _agent(_sessions(kind, proxy, request), [work], wall=None)  # no deadline
    run = asyncio.create_task(agent.run("go", session=f"cancel-{new_id()[:8]}"))
    await stalled.wait()
    await asyncio.sleep(0.3)  # the run is now waiting on the stalled store
    assert not run.done()
    cancelled = time.monotonic()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    took = time.monotonic() - cancelled
    assert took < 2.0, f"cancelling took {took:.1f} s"
    proxy.heal()
    await agent.aclose()


@pytest.mark.parametrize("kind", STORES)
async def test_the_first_run_after_a_server_restart_succeeds(
    kind: str, proxy: FaultProxy, request: pytest.FixtureRequest
) -> None:
    @tether.tool
    def work(q: str) -> str:
        """Do the work."""
        return "worked"

    agent = _agent(_sessions(kind, proxy, request), [work])
    name = f"restart-{new_id()[:8]}"
    first = await agent.run("before", session=name)
    assert first.error is None and first.output == "done"
    # The "restart": every connection the store holds is gone.
    proxy.cut()
    if kind == "postgres":
        database = urlsplit(request.getfixturevalue("pg_database")).path.lstrip("/")
        with psycopg.connect(request.getfixturevalue("pg_database"), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )
    second = await agent.run("after", session=name)
    assert second.error is None and second.output == "done"
    history = await _history(agent, name)
    assert [m.text for m in history if m.role == "user"] == ["before", "after"]
    assert_invariant(history)
    await agent.aclose()


async def test_a_sqlite_write_lock_held_by_another_process_ends_the_run_by_its_deadline(
    tmp_path: Any,
) -> None:
    import sqlite3

    path = tmp_path / "sessions.sqlite3"
    sessions = {"store": "sqlite", "settings": {"path": str(path)}}
    holder: list[sqlite3.Connection] = []

    @tether.tool
    def work(q: str) -> str:
        """Do the work."""
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN IMMEDIATE")  # the file's write lock, held from now on
        holder.append(conn)
        return "worked"

    agent = _agent(sessions, [work])
    name = f"locked-{new_id()[:8]}"
    try:
        error, elapsed = await _ending(agent, name)
        assert isinstance(error, SessionTimeoutError), error
        assert elapsed < ENDED_BY, f"the run took {elapsed:.1f} s with wall_time_s = {WALL}"
    finally:
        for conn in holder:
            conn.rollback()
            conn.close()
    error, _ = await _ending(agent, name)  # the lock is gone; the dead run's call answered
    assert error is None
    assert_invariant(await _history(agent, name))
    await agent.aclose()
