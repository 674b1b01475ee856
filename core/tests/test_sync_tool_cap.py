"""The cap on hung sync tool calls holds: however many sync tools hang, at most
``max_abandoned`` of them ever run past their callers, and every call beyond the cap
fails at once with a ToolError (an error result in a run) saying why."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import tether
from tether import sync_tools
from tether.config import Config, LimitsConfig
from tether.errors import ToolError
from tether.sync_tools import SyncToolRunner
from tether.testing import Reply, ScriptedProvider, call

WAIT_S = 30.0  # a deadline for the test's own waits, never reached when all is well


class Hangs:
    """A sync function that blocks until :attr:`release` is set, counting the calls that
    are inside it now and the most that ever were at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Condition()
        self.inside = 0
        self.most = 0
        self.started = 0

    def __call__(self) -> str:
        with self.lock:
            self.inside += 1
            self.started += 1
            self.most = max(self.most, self.inside)
            self.lock.notify_all()
        self.release.wait(WAIT_S)
        with self.lock:
            self.inside -= 1
            self.lock.notify_all()
        return "released"

    def wait_until(self, predicate: Any) -> None:
        with self.lock:
            assert self.lock.wait_for(lambda: predicate(self), timeout=WAIT_S)


async def abandon_wave(runner: SyncToolRunner, hangs: Hangs, size: int) -> list[Any]:
    """Submit ``size`` hanging calls at once, wait until every one has either started or
    failed, then cancel the callers of those that started (they are abandoned)."""
    before = hangs.started
    tasks = [asyncio.ensure_future(runner.run(hangs)) for _ in range(size)]
    await asyncio.wait(tasks, timeout=0)  # let them queue
    loop = asyncio.get_running_loop()

    def settled() -> bool:
        failed = sum(1 for t in tasks if t.done())
        return hangs.started - before + failed >= size

    deadline = loop.time() + WAIT_S
    while not settled():
        assert loop.time() < deadline, "calls neither started nor failed"
        await asyncio.sleep(0)  # (a yield to the loop, not a timing assumption)
        await asyncio.to_thread(hangs.wait_until, lambda h: True)
    for task in tasks:
        if not task.done():
            task.cancel()
    return await asyncio.gather(*tasks, return_exceptions=True)


async def test_hung_calls_beyond_the_cap_never_start_and_fail_with_a_tool_error() -> None:
    runner = SyncToolRunner(max_workers=4, max_abandoned=6)
    hangs = Hangs()
    try:
        outcomes = []
        for _ in range(4):  # 16 hanging calls in waves of 4, cap 6
            outcomes += await abandon_wave(runner, hangs, 4)
        refused = [o for o in outcomes if isinstance(o, ToolError)]
        abandoned = [o for o in outcomes if isinstance(o, asyncio.CancelledError)]
        assert len(abandoned) == 6 and len(refused) == 10
        assert all("at most 6 may be" in str(e) for e in refused)
        assert hangs.started == 6 and hangs.most == 6 and runner.abandoned == 6
    finally:
        hangs.release.set()
    await asyncio.to_thread(hangs.wait_until, lambda h: h.inside == 0)


async def test_once_hung_calls_return_new_calls_run_again() -> None:
    runner = SyncToolRunner(max_workers=2, max_abandoned=2)
    hangs = Hangs()
    await abandon_wave(runner, hangs, 2)
    with pytest.raises(ToolError, match="hung"):
        await runner.run(lambda: 1)
    hangs.release.set()
    await asyncio.to_thread(hangs.wait_until, lambda h: h.inside == 0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while runner.abandoned:  # the threads note their return just after leaving the call
        assert loop.time() < deadline
        await asyncio.to_thread(hangs.wait_until, lambda h: True)
    assert await runner.run(lambda: 42) == 42


def test_in_a_run_the_excess_hung_tools_get_an_error_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = SyncToolRunner(max_workers=3, max_abandoned=3)
    monkeypatch.setattr(sync_tools, "_runner", runner)
    hangs = Hangs()

    @tether.tool
    def hang(n: int) -> str:
        """Hang until released."""
        return hangs()

    turns = [Reply(tool_calls=[call("hang", n=i) for i in range(3)]) for _ in range(3)]
    model = ScriptedProvider([*turns, Reply(text="gave up")])
    agent = tether.Agent(
        model, tools=[hang], config=Config(), limits=LimitsConfig(tool_timeout_s=0.5)
    )
    try:
        result = agent.run_sync("go")
    finally:
        hangs.release.set()
    results = [r for m in result.messages if m.role == "tool" for r in m.tool_results]
    assert len(results) == 9 and all(r.is_error for r in results)
    refused = [r for r in results if "at most 3 may be" in r.text]
    assert len(refused) == 6  # the first turn's three hung; every later call was refused
    assert hangs.most <= 3 and hangs.started == 3
