"""What a durable run has done but not yet written out: session writes and events.

Writing each message and each event the moment the loop produces it would cost a
database commit apiece, on top of the checkpoint of every step. Instead they wait here
and the **next step** writes them before doing its own work (a model request, a tool
call), plus a final step at the end of the run. Nothing can be lost this way: a message
waiting here was produced from checkpointed step results, so after a crash the replayed
loop produces it again, and the step that writes it is re-executed.

Every step reports how many session writes and events it wrote; that count is part of
its recorded result, so a replay drops exactly what the first execution wrote. When a
worker dies after a store commit but before DBOS recorded the step, the re-executed
write finds its own message already stored and accepts it (the version check would
otherwise refuse it). Events carry a sequence number, so a reader drops the copies a
re-executed step publishes again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from dbos import DBOS

from tether.errors import SessionConflictError, TetherError
from tether.messages import Message
from tether.sessions.versioned import SessionIO

__all__ = ["EVENTS", "Journal", "StepOutcome"]

EVENTS = "tether.events"
"""The DBOS stream key a run's events are published under (each value is a list)."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Append:
    expected: int
    position: int
    line: str


@dataclass(frozen=True, slots=True)
class _Replace:
    expected: int
    lines: list[str]


@dataclass(slots=True)
class StepOutcome:
    """A step's recorded result: its value or the tether error it ended with, and how
    much of the journal it wrote."""

    value: Any
    error: TetherError | None
    writes: int
    events: int


class Journal:
    """Pending session writes and events of one execution of a durable run."""

    def __init__(self, io: SessionIO, session: str) -> None:
        self._io = io
        self._session = session
        self._writes: list[_Append | _Replace] = []
        self._events: list[dict[str, Any]] = []
        self._seq = 0
        self._lock = asyncio.Lock()

    # -- filled by the loop ---------------------------------------------------------------
    def append(self, expected: int, position: int, message: Message) -> None:
        self._writes.append(_Append(expected, position, message.to_json()))

    def replace(self, expected: int, messages: list[Message]) -> None:
        self._writes.append(_Replace(expected, [m.to_json() for m in messages]))

    def event(self, event: dict[str, Any]) -> None:
        self._seq += 1
        self._events.append({**event, "seq": self._seq})

    # -- emptied by steps -----------------------------------------------------------------
    async def step(
        self,
        name: str,
        work: Callable[[], Awaitable[T]] | None = None,
        *,
        write_session: bool = True,
    ) -> T | None:
        """Run a DBOS step that first writes the journal (the events only, without
        ``write_session``), then does ``work`` (if any). Raises the tether error the step
        ended with, in this execution or the recorded one."""
        executed = False

        async def body() -> StepOutcome:
            nonlocal executed
            executed = True
            writes = events = 0
            try:
                async with self._lock:  # parallel tool steps write the journal one at a time
                    writes = await self._write_session() if write_session else 0
                    events = await self._publish_events()
                value = await work() if work is not None else None
            except TetherError as exc:
                return StepOutcome(None, exc, writes, events)
            return StepOutcome(value, None, writes, events)

        outcome: StepOutcome = await DBOS.run_step_async({"name": name}, body)
        if not executed:  # replayed: drop what the recorded execution wrote
            del self._writes[: outcome.writes]
            del self._events[: outcome.events]
        if outcome.error is not None:
            raise outcome.error
        result: T | None = outcome.value
        return result

    async def _write_session(self) -> int:
        done = 0
        while self._writes:
            await self._apply(self._writes[0])
            del self._writes[0]
            done += 1
        return done

    async def _publish_events(self) -> int:
        batch = list(self._events)
        if batch:
            await DBOS.write_stream_async(EVENTS, batch)
            del self._events[: len(batch)]
        return len(batch)

    async def _apply(self, write: _Append | _Replace) -> None:
        try:
            if isinstance(write, _Append):
                await self._io.append(self._session, write.expected, write.position, write.line)
            else:
                await self._io.replace(self._session, write.expected, write.lines)
        except SessionConflictError:
            if not await self._already_applied(write):
                raise

    async def _already_applied(self, write: _Append | _Replace) -> bool:
        """Whether the store holds this write already (the step ran before and its
        worker died after the commit, before DBOS recorded the step)."""
        record = await self._io.load(self._session)
        if record is None or record.version < write.expected + 1:
            return False
        if isinstance(write, _Append):
            return len(record.lines) > write.position and _same(
                record.lines[write.position], write.line
            )
        stored = record.lines[: len(write.lines)]
        return len(stored) == len(write.lines) and all(
            _same(a, b) for a, b in zip(stored, write.lines, strict=True)
        )


def _same(stored: str, ours: str) -> bool:
    """Same message, ignoring its id and timestamp (a re-executed step builds the tool
    message anew)."""
    if stored == ours:
        return True
    a, b = Message.from_json(stored), Message.from_json(ours)
    return a.role == b.role and a.content == b.content
