"""Sessions and runs as resources: who owns them, their events, their lifecycle.

A run is a task that consumes one ``agent.stream`` (or ``agent.resume_stream``) and
appends each event, as :func:`tether.event_to_dict`, to the run's buffer; clients follow
the buffer from any position (``Last-Event-ID``), so a reconnecting client misses
nothing while the run is live or retained. A run ends with exactly one ``done`` or
``error`` event. Cancelling goes through the run's :class:`tether.CancelToken` first, so
the loop ends cleanly (interrupted calls get their results and the session stays valid);
only a run that has not ended within ``cancel_deadline_s`` has its task cancelled.

Everything is scoped by tenant: a lookup with another tenant's id finds nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import tether
from tether import CancelToken, TetherError
from tether.sessions import AnySession, InMemorySession, close_session

from .owners import Owned, OwnerStore

__all__ = ["Hub", "RunRecord", "SessionRecord", "valid_session_id"]

log = logging.getLogger("tether_serve")

_SESSION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")

SessionFactory = Callable[[str, str], AnySession]
"""``factory(tenant, session_id)`` opens the history of a new session."""


def valid_session_id(value: str) -> bool:
    return bool(_SESSION_ID.match(value))


@dataclass(slots=True)
class SessionRecord:
    id: str
    tenant: str
    agent: str
    session: AnySession
    created: float = field(default_factory=time.time)
    runs: list[str] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Calls the last run suspended on, waiting for a decision."""
    question: dict[str, Any] | None = None
    """What a tool of the last run asked a person (``NeedsHuman``), waiting for an answer."""
    running: str | None = None
    cost: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "created": self.created,
            "runs": list(self.runs),
            "running": self.running,
            "pending": list(self.pending),
            "question": self.question,
            "messages": len(self.session.messages) if hasattr(self.session, "messages") else None,
            "cost": self.cost,
        }


@dataclass(slots=True)
class RunRecord:
    id: str
    tenant: str
    key_id: str
    session_id: str
    agent: str
    kind: str  # "prompt" or "resume"
    cancel: CancelToken = field(default_factory=CancelToken)
    events: list[dict[str, Any]] = field(default_factory=list)
    status: str = "running"
    created: float = field(default_factory=time.time)
    finished: float | None = None
    task: asyncio.Task[None] | None = None
    clients: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def done(self) -> bool:
        return self.finished is not None

    def append(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def close(self) -> None:
        """Wake the followers after the run has ended."""
        self._changed.set()

    def summary(self) -> dict[str, Any]:
        last = self.events[-1] if self.done and self.events else None
        return {
            "id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "kind": self.kind,
            "status": self.status,
            "created": self.created,
            "finished": self.finished,
            "events": len(self.events),
            "result": last,
        }

    async def follow(
        self, after: int, keepalive: float
    ) -> AsyncGenerator[tuple[int, dict[str, Any]] | None]:
        """Yield ``(seq, event)`` for events after ``after`` (1-based), then new ones as
        they come, until the run ends; ``None`` every ``keepalive`` s of silence."""
        position = max(0, after)
        while True:
            changed = self._changed
            while position < len(self.events):
                position += 1
                yield position, self.events[position - 1]
            if self.done:
                return
            try:
                await asyncio.wait_for(changed.wait(), keepalive)
            except TimeoutError:
                yield None


class Hub:
    """Sessions and runs of every tenant, in this process."""

    def __init__(
        self,
        *,
        cancel_deadline_s: float = 10.0,
        disconnect_grace_s: float = 0.0,
        retained_runs: int = 1000,
        session_factory: SessionFactory | None = None,
        on_run_end: Callable[[RunRecord], None] | None = None,
        owners: OwnerStore | None = None,
    ) -> None:
        self.sessions: dict[tuple[str, str], SessionRecord] = {}
        self.owners = owners
        self._owned: dict[tuple[str, str], Owned] = {
            (o.tenant, o.session): o for o in (owners.load() if owners is not None else [])
        }
        """Sessions of earlier runs of the server, opened when first asked for."""
        self.runs: OrderedDict[str, RunRecord] = OrderedDict()
        self.cancel_deadline_s = cancel_deadline_s
        self.disconnect_grace_s = disconnect_grace_s
        self.retained_runs = retained_runs
        self.session_factory = session_factory or (lambda tenant, sid: InMemorySession(id=sid))
        self.on_run_end = on_run_end
        self._background: set[asyncio.Task[None]] = set()

    # -- lookups (tenant-scoped) -----------------------------------------------------------
    def session(self, tenant: str, session_id: str) -> SessionRecord | None:
        record = self.sessions.get((tenant, session_id))
        if record is None and (tenant, session_id) in self._owned:
            record = self._reopen(self._owned.pop((tenant, session_id)))
        return record

    def sessions_of(self, tenant: str) -> list[SessionRecord]:
        for key in [k for k in self._owned if k[0] == tenant]:
            self._reopen(self._owned.pop(key))
        return sorted(
            (s for (t, _), s in self.sessions.items() if t == tenant), key=lambda s: s.created
        )

    def _reopen(self, owned: Owned) -> SessionRecord:
        session = self.session_factory(owned.tenant, owned.session)
        record = SessionRecord(owned.session, owned.tenant, owned.agent, session, owned.created)
        record.pending, record.question = list(owned.pending), owned.question
        self.sessions[(owned.tenant, owned.session)] = record
        return record

    def run(self, tenant: str, run_id: str) -> RunRecord | None:
        run = self.runs.get(run_id)
        return run if run is not None and run.tenant == tenant else None

    def runs_of(self, tenant: str) -> list[RunRecord]:
        return [r for r in self.runs.values() if r.tenant == tenant]

    def running(self) -> list[RunRecord]:
        return [r for r in self.runs.values() if not r.done]

    def open_session(self, tenant: str, session_id: str | None, agent: str) -> SessionRecord:
        """The tenant's session ``session_id``, created (for ``agent``) if it is new."""
        sid = session_id or uuid.uuid4().hex
        record = self.session(tenant, sid)
        if record is None:
            record = SessionRecord(sid, tenant, agent, self.session_factory(tenant, sid))
            if self.owners is not None:
                self.owners.add(Owned(tenant, sid, agent, record.created))
            self.sessions[(tenant, sid)] = record
        return record

    # -- runs ------------------------------------------------------------------------------
    def start(
        self,
        record: SessionRecord,
        key_id: str,
        kind: str,
        events: Callable[[CancelToken], AsyncGenerator[tether.RunEvent]],
    ) -> RunRecord:
        """Start a run on ``record`` (the caller checked it is not running)."""
        run = RunRecord(uuid.uuid4().hex, record.tenant, key_id, record.id, record.agent, kind)
        waited = bool(record.pending or record.question)
        record.running, record.pending, record.question = run.id, [], None
        if waited and self.owners is not None:
            self.owners.waiting(record.tenant, record.id, [], None)
        record.runs.append(run.id)
        self.runs[run.id] = run
        run.task = asyncio.create_task(self._pump(run, record, events(run.cancel)))
        self._evict()
        return run

    async def _pump(
        self, run: RunRecord, record: SessionRecord, events: AsyncGenerator[tether.RunEvent]
    ) -> None:
        try:
            async with contextlib.aclosing(events) as stream:
                async for event in stream:
                    data = tether.event_to_dict(event)
                    if isinstance(event, tether.Done):
                        self._finish(run, record, data, event.result.error)
                    run.append(data)
            run.status = run.status if run.status != "running" else "failed"
        except asyncio.CancelledError:
            run.status = "cancelled"
            run.append(_error_event("The run was cancelled.", "RunCancelled"))
            raise
        except TetherError as error:
            run.status = "failed"
            run.append(_error_event(str(error), type(error).__name__))
        except Exception:
            log.exception("run %s failed", run.id)
            run.status = "failed"
            run.append(_error_event("The run failed with an internal error.", "InternalError"))
        finally:
            if record.running == run.id:
                record.running = None
            run.finished = time.time()
            run.close()
            if self.on_run_end is not None:
                self.on_run_end(run)

    def _finish(
        self,
        run: RunRecord,
        record: SessionRecord,
        done: dict[str, Any],
        error: BaseException | None,
    ) -> None:
        run.status = str(done.get("outcome"))
        if isinstance(error, tether.NeedsHuman):
            run.append(
                {"type": "needs_human", "message": error.user_message, "session_id": record.id}
            )
            record.question = {
                "session_id": record.id,
                "run_id": run.id,
                "message": error.user_message,
                "asked": time.time(),
            }
        if done.get("cost"):
            record.cost += float(done["cost"])
        pending = done.get("pending") or []
        record.pending = [dict(p, run_id=run.id, session_id=record.id) for p in pending]
        if self.owners is not None and (record.pending or record.question):
            self.owners.waiting(record.tenant, record.id, record.pending, record.question)
        for call in pending:
            run.append(
                {
                    "type": "approval_request",
                    "call_id": call["call_id"],
                    "tool": call["tool"],
                    "arguments": call["arguments"],
                    "rule": call.get("rule"),
                    "session_id": record.id,
                }
            )

    async def cancel(self, run: RunRecord, reason: str) -> None:
        """Cancel ``run`` and wait (up to ``cancel_deadline_s``, then harder) for its end."""
        if run.done or run.task is None:
            return
        run.cancel.cancel(reason)
        done, _ = await asyncio.wait({run.task}, timeout=self.cancel_deadline_s)
        if not done:
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(run.task, self.cancel_deadline_s)

    def detach(self, run: RunRecord) -> None:
        """A client stopped following ``run``: cancel it when it was the last one (after
        ``disconnect_grace_s``, so it can reconnect)."""
        run.clients -= 1
        if run.done or run.clients > 0:
            return
        task = asyncio.create_task(self._cancel_if_abandoned(run))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _cancel_if_abandoned(self, run: RunRecord) -> None:
        if self.disconnect_grace_s > 0:
            await asyncio.sleep(self.disconnect_grace_s)
        if run.clients <= 0 and not run.done:
            await self.cancel(run, "the client disconnected")

    def _evict(self) -> None:
        finished = [r for r in self.runs.values() if r.done]
        for run in finished[: max(0, len(finished) - self.retained_runs)]:
            del self.runs[run.id]

    async def aclose(self) -> None:
        """Cancel every running run, then close every session (server shutdown)."""
        await asyncio.gather(
            *(self.cancel(r, "the server is shutting down") for r in self.running()),
            return_exceptions=True,
        )
        for record in self.sessions.values():
            try:
                await close_session(record.session)
            except Exception:
                log.exception("closing session %s failed", record.id)


def _error_event(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": message, "error_type": kind}
