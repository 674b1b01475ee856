"""What a durable run has done but not yet written out: session writes and events.

Writing each message and each event the moment the loop produces it would cost a
database commit apiece, on top of the checkpoint of every step. Instead they wait here
and the **next step** writes them along with its own work (a model request, a tool
call), plus a final step at the end of the run. Nothing can be lost this way: a message
waiting here was produced from checkpointed step results, so after a crash the replayed
loop produces it again, and the step that writes it is re-executed.

Every step reports how many session writes and events it wrote; that count is part of
its recorded result, so a replay drops exactly what the first execution wrote. A write
the loop makes after a step that was executed (not replayed) starts at once, while DBOS
records that step and starts the next (a model's response is written while its step is
recorded); a model step does not wait for its session writes either (a request has no
side effect). The next step waits for every write before its work acts (a tool's side
effect never happens after a refused write) and counts the ones done since the step
before it. While a run replays recorded steps nothing is written until a step executes:
those writes may be in the store already, and the step that executes finds them. When a
worker dies after a store commit but before DBOS recorded the step, the re-executed
write finds its own message already stored and accepts it (the version check would
otherwise refuse it). Events carry a sequence number, so a reader drops the copies a
re-executed step publishes again. A step publishes the pending events only once the
oldest is :data:`EVENTS_LATENCY_S` old (or in a model step's first batch of deltas):
quick steps leave them to the next, so they share one stream write. A stream write still
in flight when a step's work ends goes on while DBOS records the step (as a model step's
session writes do); the step that sees it done counts its events. At the run's end
:meth:`Journal.finish` waits for every write, publishes the last events and closes the
stream, outside any step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dbos import DBOS

from tether.errors import SessionConflictError, TetherError
from tether.messages import Message
from tether.sessions.versioned import SessionIO

__all__ = ["EVENTS", "EVENTS_LATENCY_S", "Journal", "StepOutcome", "StepStream"]

EVENTS = "tether.events"
"""The DBOS stream key a run's events are published under (each value is a list)."""

EVENTS_LATENCY_S = 0.05
"""The longest an event waits for a step that writes it to the stream: a step that ends
sooner leaves it to the next, so quick steps share one write."""

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
    """A step's recorded result: its value or the tether error it ended with, how much
    of the journal it wrote, and the stream values it left to later steps."""

    value: Any
    error: TetherError | None
    writes: int
    events: int
    later: list[dict[str, Any]] = field(default_factory=list)


class Journal:
    """Pending session writes and events of one execution of a durable run."""

    def __init__(self, io: SessionIO, session: str) -> None:
        self._io = io
        self._session = session
        self._writes: list[_Append | _Replace] = []
        self._events: list[dict[str, Any]] = []
        self._seq = 0
        self._oldest: float | None = None
        self._session_lock = asyncio.Lock()
        self._writer: asyncio.Future[None] | None = None
        self._written = 0
        self._events_lock = asyncio.Lock()
        self._published = 0
        """Events written to the stream since the last step that counted them."""
        self._publish_error: BaseException | None = None
        self.live = False
        """Whether the last step was executed rather than replayed: then a write starts
        as soon as the loop makes it."""

    # -- filled by the loop ---------------------------------------------------------------
    def append(self, expected: int, position: int, message: Message) -> None:
        self._writes.append(_Append(expected, position, message.to_json()))
        if self.live:
            self._writing()

    def replace(self, expected: int, messages: list[Message]) -> None:
        self._writes.append(_Replace(expected, [m.to_json() for m in messages]))
        if self.live:
            self._writing()

    def event(self, event: dict[str, Any]) -> None:
        self._seq += 1
        if not self._events:
            self._oldest = time.monotonic()
        self._events.append({**event, "seq": self._seq})

    # -- emptied by steps -----------------------------------------------------------------
    async def step(
        self,
        name: str,
        work: Callable[[StepStream], Awaitable[T]] | None = None,
        *,
        write_session: bool = True,
        session_alongside: bool = False,
    ) -> T | None:
        """Run a DBOS step that writes the journal and does ``work`` (if any). Raises the
        tether error the step ended with, in this execution or the recorded one.

        The journal's events go out in the step's first stream write: the work's own
        (``stream.write``, a model step's deltas), or, when the oldest is
        :data:`EVENTS_LATENCY_S` old, one of their own while the work goes on; a step
        that ends sooner leaves them to the next. What the work leaves for later
        (``stream.later``, the deltas of a model step's last moments) is part of the
        step's recorded result and joins the journal's events, so a replay puts them
        back. Session writes come first, before ``work`` acts (a tool's side effect must
        not happen after a refused write), unless ``session_alongside`` (a model request,
        which has no side effect): then they start with the work, a write refused while
        the work goes on cancels it, and the step ends when the work does, leaving the
        writes still in flight to finish while DBOS records the step and starts the next
        one, which waits for them before its own work acts. A step records how many
        writes it saw done since the previous step's count (its own and those left in
        flight before it), so a replay drops exactly those.
        """
        executed = False

        async def body() -> StepOutcome:
            nonlocal executed
            executed = True
            return await self._execute(work, write_session, session_alongside)

        outcome: StepOutcome = await DBOS.run_step_async({"name": name}, body)
        self.live = executed
        if not executed:  # replayed: drop what the recorded execution wrote
            del self._writes[: outcome.writes]
            del self._events[: outcome.events]
            self._oldest = None
        for value in outcome.later:  # numbered alike on every execution and replay
            self.event(value)
        if outcome.error is not None:
            raise outcome.error
        result: T | None = outcome.value
        return result

    async def finish(self) -> None:
        """End the run's journal outside any step: wait for every session write, publish
        the pending events and close the stream (two recorded DBOS operations instead of
        a step and one). A replay after a crash redoes the writes (each finds itself
        stored and is accepted) and skips the recorded operations.

        :raises SessionConflictError: a write was refused.
        """
        await self._write_all()
        async with self._events_lock:  # after every stream write still in flight
            if self._publish_error is not None:
                raise self._publish_error
            batch = self._claim_events()
            if batch:
                await DBOS.write_stream_async(EVENTS, batch)
        await DBOS.close_stream_async(EVENTS)

    async def _execute(
        self,
        work: Callable[[StepStream], Awaitable[T]] | None,
        write_session: bool,
        session_alongside: bool,
    ) -> StepOutcome:
        stream = StepStream(self)
        publishing = asyncio.ensure_future(stream.when_due() if work else stream.finish())
        writing: asyncio.Future[None] | None = None
        if write_session:
            writing = asyncio.ensure_future(
                self._start_writing() if session_alongside else self._write_all()
            )
        doing: asyncio.Future[T] | None = None
        value: Any = None
        error: TetherError | None = None
        try:
            if writing is not None and not session_alongside:
                await writing
            if work is not None:
                doing = asyncio.ensure_future(work(stream))
                if writing is not None and not writing.done():
                    await asyncio.wait((doing, writing), return_when=asyncio.FIRST_COMPLETED)
                    if writing.done() and writing.exception() is not None:
                        await writing  # a refused write: the work is cancelled below
                value = await doing
            elif writing is not None:
                await writing
        except TetherError as exc:
            error = exc
        finally:
            if doing is not None and not doing.done():
                doing.cancel()
        if writing is not None and (error is not None or not session_alongside):
            await asyncio.wait((writing,))  # let a write in flight settle: it may commit
            if not writing.cancelled():
                writing.exception()  # already raised, or superseded by the work's error
        elif writing is not None:  # a model step's writes go on; the next step waits
            writing.add_done_callback(_consume)
        if stream.claimed is None and work is not None:
            publishing.cancel()  # not due yet: the next step publishes them
        if work is not None and not publishing.done():
            # A write of events in flight goes on while DBOS records this step; the step
            # that sees it done counts its events (a replay drops exactly those).
            publishing.add_done_callback(_consume)
        else:
            await asyncio.wait((publishing,))  # after every earlier write (one at a time)
        if self._publish_error is not None:
            raise self._publish_error  # the events it claimed were not written
        value = value if error is None else None
        written = 0
        if write_session:  # the writes done since the last step that counted them
            written, self._written = self._written, 0
        published, self._published = self._published, 0
        return StepOutcome(value, error, written, published, stream.deferred)

    def _writing(self) -> asyncio.Future[None]:
        """The task writing the pending session writes in order, started if none is."""
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write_session())
            self._writer.add_done_callback(_consume)
        return self._writer

    async def _start_writing(self) -> None:
        """Start the pending writes (a model step's) and return when the first fails (it
        is raised) or when they are all done, whichever the step sees first: a model
        step ends without waiting for them. They go on while DBOS records the step and
        starts the next, which waits for them (:meth:`_write_all`) before its work acts
        and counts them as its own (the count a step records is what it saw written, so
        a replay drops exactly those)."""
        await asyncio.shield(self._writing())

    async def _write_all(self) -> None:
        """Write every pending write, those a previous step left in flight first."""
        while True:
            await asyncio.shield(self._writing())
            if not self._writes:
                return

    async def _write_session(self) -> None:
        async with self._session_lock:  # one writer at a time, in order
            while self._writes:
                await self._apply(self._writes[0])
                del self._writes[0]
                self._written += 1

    def _claim_events(self) -> list[dict[str, Any]]:
        batch = list(self._events)
        del self._events[: len(batch)]
        self._oldest = None
        return batch

    def _due_in(self) -> float | None:
        """Seconds until the oldest pending event is due for publishing (``None``: none)."""
        if not self._events:
            return None
        if self._oldest is None:
            self._oldest = time.monotonic()
        return max(0.0, self._oldest + EVENTS_LATENCY_S - time.monotonic())

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


class StepStream:
    """The run's event stream as one execution of a step writes it.

    Its first write carries the journal's events pending at that moment ahead of its own
    values (so a step makes one stream write, not two); stream writes of a run go out one
    at a time, in order, so readers see increasing sequence numbers.
    """

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self.claimed: int | None = None
        self.deferred: list[dict[str, Any]] = []

    async def write(self, values: list[dict[str, Any]]) -> None:
        """Publish ``values`` now (after the journal's pending events, the first time)."""
        async with self._journal._events_lock:
            batch: list[dict[str, Any]] = []
            if self.claimed is None:
                batch = self._journal._claim_events()
                self.claimed = len(batch)
            claimed = len(batch)
            batch.extend(values)
            if batch:
                try:
                    await DBOS.write_stream_async(EVENTS, batch)
                except BaseException as exc:
                    if claimed:  # lost from the journal: the run cannot go on
                        self._journal._publish_error = exc
                    raise
            self._journal._published += claimed

    def later(self, values: list[dict[str, Any]]) -> None:
        """Leave ``values`` to a later step: they are recorded with this step's result
        and become journal events (with sequence numbers) when it returns."""
        self.deferred.extend(values)

    async def finish(self) -> None:
        """Publish the pending events if no write of this step did yet."""
        if self.claimed is None:
            await self.write([])

    async def when_due(self) -> None:
        """Publish the pending events once the oldest is :data:`EVENTS_LATENCY_S` old
        (cancelled before then, the step leaves them to the next one)."""
        due = self._journal._due_in()
        if due is None:
            return
        await asyncio.sleep(due)
        await self.finish()


def _consume(future: asyncio.Future[None]) -> None:
    """Retrieve a failed write's error: the step waiting for the write raises it."""
    if not future.cancelled():
        future.exception()


def _same(stored: str, ours: str) -> bool:
    """Same message, ignoring its id and timestamp (a re-executed step builds the tool
    message anew)."""
    if stored == ours:
        return True
    a, b = Message.from_json(stored), Message.from_json(ours)
    return a.role == b.role and a.content == b.content
