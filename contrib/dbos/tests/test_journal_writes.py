"""How a durable run's steps carry its session writes: a model step ends without waiting
for them (a request has no side effect), the next step waits for them before its tool
acts and counts them as its own, and a write refused after the model step ended stops
the run at that next step, before the tool acts. DBOS's step runner is stood in for by
one that runs the step and returns its result, as DBOS does on a first execution."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import pytest

from tether.errors import SessionConflictError
from tether.messages import Message
from tether.sessions.versioned import StoredRecord, conflict
from tether_dbos import journal as journal_module
from tether_dbos.journal import Journal, StepOutcome, StepStream


class _Steps:
    """Runs each step at once and keeps its recorded outcome."""

    def __init__(self) -> None:
        self.outcomes: list[StepOutcome] = []

    async def run_step_async(self, options: dict[str, str], body: Callable[[], Any]) -> Any:
        outcome = await body()
        self.outcomes.append(outcome)
        return outcome

    async def write_stream_async(self, key: str, value: Any) -> None:
        return None


class _HeldIO:
    """A session store whose appends wait for ``release``; ``refuse`` makes them fail as
    after another writer's change."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.release = asyncio.Event()
        self.refuse = refuse
        self.lines: list[str] = []

    async def append(self, name: str, expected: int, position: int, line: str) -> int:
        await self.release.wait()
        if self.refuse:
            raise conflict(name, expected, expected + 1)
        self.lines.append(line)
        return expected + 1

    async def load(self, name: str) -> StoredRecord | None:
        return None

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int:
        raise AssertionError("not used")


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Steps]:
    fake = _Steps()
    monkeypatch.setattr(journal_module, "DBOS", fake)
    yield fake


def _model(answer: str) -> Callable[[StepStream], Awaitable[str]]:
    async def work(stream: StepStream) -> str:
        return answer

    return work


def test_a_model_step_ends_before_its_writes_and_the_tool_step_waits_for_them(
    steps: _Steps,
) -> None:
    async def scenario() -> None:
        io = _HeldIO()
        journal = Journal(io, "s")  # type: ignore[arg-type]
        journal.append(0, 0, Message.user("hello"))
        response = await asyncio.wait_for(
            journal.step("tether.model", _model("call"), session_alongside=True), 10
        )
        assert response == "call" and io.lines == []  # the write is still in flight

        acted: list[list[str]] = []

        async def tool(stream: StepStream) -> str:
            acted.append(list(io.lines))
            return "ok"

        tool_step = asyncio.ensure_future(journal.step("tether.tool.noop", tool))
        await asyncio.sleep(0.05)
        assert not tool_step.done() and acted == []  # the tool waits for the write
        io.release.set()
        assert await asyncio.wait_for(tool_step, 10) == "ok"
        assert len(acted[0]) == 1  # it acted once the write was in the store
        assert [o.writes for o in steps.outcomes] == [0, 1]  # counted by the step that waited

    asyncio.run(scenario())


def test_a_write_refused_after_the_model_step_stops_the_run_before_the_tool_acts(
    steps: _Steps,
) -> None:
    async def scenario() -> None:
        io = _HeldIO(refuse=True)
        journal = Journal(io, "s")  # type: ignore[arg-type]
        journal.append(0, 0, Message.user("hello"))
        assert await journal.step("tether.model", _model("call"), session_alongside=True)
        io.release.set()
        acted: list[str] = []

        async def tool(stream: StepStream) -> str:
            acted.append("acted")
            return "ok"

        with pytest.raises(SessionConflictError):
            await asyncio.wait_for(journal.step("tether.tool.noop", tool), 10)
        assert acted == []
        assert steps.outcomes[-1].error is not None  # recorded: a replay raises it too

    asyncio.run(scenario())


def test_a_write_refused_during_the_request_cancels_it(steps: _Steps) -> None:
    async def scenario() -> None:
        io = _HeldIO(refuse=True)
        io.release.set()
        journal = Journal(io, "s")  # type: ignore[arg-type]
        journal.append(0, 0, Message.user("hello"))
        cancelled = asyncio.Event()

        async def slow_model(stream: StepStream) -> str:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "late"

        with pytest.raises(SessionConflictError):
            await asyncio.wait_for(
                journal.step("tether.model", slow_model, session_alongside=True), 10
            )
        assert cancelled.is_set()

    asyncio.run(scenario())


class _ReplayingSteps(_Steps):
    """Returns the outcomes recorded by an earlier execution for the first steps, as DBOS
    does when a workflow is resumed, and runs the rest."""

    def __init__(self, recorded: list[StepOutcome]) -> None:
        super().__init__()
        self.recorded = recorded

    async def run_step_async(self, options: dict[str, str], body: Callable[[], Any]) -> Any:
        if len(self.outcomes) < len(self.recorded):
            outcome = self.recorded[len(self.outcomes)]
            self.outcomes.append(outcome)
            return outcome
        return await super().run_step_async(options, body)


class _Store:
    """An in-memory session store with the version check of the real ones."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.hold_at: int | None = None  # an append at this position waits for release
        self.release: asyncio.Event | None = None

    async def append(self, name: str, expected: int, position: int, line: str) -> int:
        if position == self.hold_at and self.release is not None:
            await self.release.wait()
        if expected != len(self.lines) or position != len(self.lines):
            raise conflict(name, expected, len(self.lines))
        self.lines.append(line)
        return len(self.lines)

    async def load(self, name: str) -> StoredRecord | None:
        return StoredRecord("id", 0.0, len(self.lines), list(self.lines))

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int:
        raise AssertionError("not used")


@pytest.mark.parametrize("landed", [True, False], ids=["write-landed", "write-lost"])
def test_a_resumed_run_writes_each_message_once_after_a_crash_behind_a_model_step(
    monkeypatch: pytest.MonkeyPatch, landed: bool
) -> None:
    """The worker dies after a model step is recorded while its session write is in
    flight (committed or not): the resumed run replays the recorded steps and writes
    every message exactly once, in order."""
    messages = [Message.user("hello")] + [
        Message(role="assistant" if i % 2 else "tool", content=[]) for i in range(1, 5)
    ]
    store = _Store()

    async def run(journal: Journal, upto: int) -> None:
        """The loop's writes and steps: user, model, A1, tool, R1, model, A2, tool."""
        plan: list[tuple[str, int | None]] = [
            ("append", 0), ("model", None), ("append", 1), ("tool", None),
            ("append", 2), ("model", None), ("append", 3), ("tool", None),
        ]  # fmt: skip
        for kind, index in plan[:upto]:
            if kind == "append":
                assert index is not None
                journal.append(index, index, messages[index])
            elif kind == "model":
                await journal.step("tether.model", _model("call"), session_alongside=True)
            else:
                await journal.step("tether.tool.noop", _model("ok"))

    async def scenario() -> None:
        first = _Steps()
        monkeypatch.setattr(journal_module, "DBOS", first)
        journal = Journal(store, "s")  # type: ignore[arg-type]
        store.hold_at, store.release = 2, asyncio.Event()
        await run(journal, 6)  # ...up to the second model step, recorded
        assert first.outcomes[-1].writes == 0  # it ended before its write
        if landed:
            store.release.set()  # the write in flight commits before the crash
        else:
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()  # the process dies first
        for _ in range(100):  # let the write (or its cancellation) go through
            await asyncio.sleep(0)
        assert len(store.lines) == (3 if landed else 2)
        store.hold_at = None

        monkeypatch.setattr(journal_module, "DBOS", _ReplayingSteps(first.outcomes))
        resumed = Journal(store, "s")  # type: ignore[arg-type]
        await run(resumed, 8)
        await resumed.step("tether.flush")

    asyncio.run(scenario())
    assert store.lines == [m.to_json() for m in messages[:4]]


async def _settle() -> None:
    """Let the tasks started so far run until they wait on something."""
    for _ in range(50):
        await asyncio.sleep(0)


def test_a_write_after_an_executed_step_starts_at_once_and_the_next_step_counts_it(
    steps: _Steps,
) -> None:
    async def scenario() -> None:
        store = _Store()
        journal = Journal(store, "s")  # type: ignore[arg-type]
        journal.append(0, 0, Message.user("hello"))
        await journal.step("tether.model", _model("call"), session_alongside=True)
        await _settle()
        journal.append(1, 1, Message(role="assistant", content=[]))
        await _settle()
        # Written while DBOS would still be recording the model step, before any step.
        assert len(store.lines) == 2
        acted: list[int] = []

        async def tool(stream: StepStream) -> str:
            acted.append(len(store.lines))
            return "ok"

        await journal.step("tether.tool.noop", tool)
        assert acted == [2]
        assert sum(o.writes for o in steps.outcomes) == 2  # each write counted once

    asyncio.run(scenario())


def test_nothing_is_written_while_recorded_steps_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        store = _Store()
        store.lines = [Message.user("hello").to_json()]  # what the first execution wrote
        recorded = [StepOutcome("call", None, 1, 0)]
        monkeypatch.setattr(journal_module, "DBOS", _ReplayingSteps(recorded))
        journal = Journal(store, "s")  # type: ignore[arg-type]
        journal.append(0, 0, Message.user("hello"))
        await journal.step("tether.model", _model("call"), session_alongside=True)  # replayed
        journal.append(1, 1, Message(role="assistant", content=[]))
        await _settle()
        assert len(store.lines) == 1  # a replay writes nothing outside a step
        await journal.step("tether.tool.noop", _model("ok"))  # executed: writes it
        assert len(store.lines) == 2

    asyncio.run(scenario())


class _HeldStream(_Steps):
    """Steps as on a first execution; stream writes wait for ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.written: list[list[int]] = []

        self.closed = False

    async def write_stream_async(self, key: str, value: Any) -> None:
        await self.release.wait()
        assert not self.closed
        self.written.append([event["seq"] for event in value if "seq" in event])

    async def close_stream_async(self, key: str) -> None:
        self.closed = True


def test_a_stream_write_in_flight_does_not_hold_its_step_and_is_counted_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        steps = _HeldStream()
        monkeypatch.setattr(journal_module, "DBOS", steps)
        monkeypatch.setattr(journal_module, "EVENTS_LATENCY_S", 0.0)  # due at once
        journal = Journal(_Store(), "s")  # type: ignore[arg-type]
        journal.event({"type": "run_start"})
        tool = asyncio.ensure_future(journal.step("tether.tool.noop", _model("ok")))
        await _settle()
        assert tool.done() and steps.written == []  # ended with its write in flight
        assert steps.outcomes[-1].events == 0  # not counted: not written yet
        journal.event({"type": "tool_end"})
        last = asyncio.ensure_future(journal.step("tether.flush", write_session=False))
        await _settle()
        assert not last.done()  # a flush waits for every write
        steps.release.set()
        await asyncio.wait_for(last, 10)
        assert steps.written == [[1], [2]]  # in order, each once
        assert [o.events for o in steps.outcomes] == [0, 2]  # counted by the step that saw them

    asyncio.run(scenario())


def test_the_end_of_a_run_waits_for_every_write_then_closes_the_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        steps = _HeldStream()
        monkeypatch.setattr(journal_module, "DBOS", steps)
        monkeypatch.setattr(journal_module, "EVENTS_LATENCY_S", 0.0)
        store = _Store()
        journal = Journal(store, "s")  # type: ignore[arg-type]
        journal.event({"type": "run_start"})
        await journal.step("tether.tool.noop", _model("ok"))  # its stream write in flight
        journal.append(0, 0, Message.user("hello"))  # after an executed step: starts now
        journal.event({"type": "done"})
        end = asyncio.ensure_future(journal.finish())
        await _settle()
        assert not end.done() and not steps.closed
        steps.release.set()
        await asyncio.wait_for(end, 10)
        assert steps.written == [[1], [2]] and steps.closed  # every event, then the close
        assert len(store.lines) == 1

    asyncio.run(scenario())
