"""The durable run: the agent loop as one DBOS workflow."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from dbos import DBOS

from tether import Outcome, RunResult
from tether.errors import TetherError
from tether.events import Done, RunEvent, TextDelta, ThinkingDelta, event_to_dict
from tether.messages import Message

from . import runtime
from .boundary import DbosBoundary
from .journal import EVENTS, Journal
from .session import open_durable_session, session_io
from .spec import RunSpec

__all__ = ["WORKFLOW", "durable_run"]

WORKFLOW = "tether.run"
REPLY = "tether.reply"
APPROVAL = "tether.approval"
END = ""
"""Sent as a reply, ends a run that waits for replies."""


@DBOS.workflow(name=WORKFLOW)
async def durable_run(spec_data: dict[str, object]) -> RunResult:
    """Run ``spec`` (a :class:`RunSpec` as data) to its end, durably.

    The loop is tether's own (:meth:`tether.Agent.stream`) behind a
    :class:`~tether_dbos.boundary.DbosBoundary`: model requests, tool calls and session
    writes are steps; everything between them is replayed deterministically from their
    recorded results after a crash. Session writes and events go through the run's
    :class:`~tether_dbos.journal.Journal`: a write starts as soon as the loop makes it
    (while replaying, with the next executed step), events wait for the next step. At
    the run's end the journal waits for the last writes, publishes the last events and
    closes the event stream without a step of its own.
    A run suspended for approval waits (durably) for :meth:`RunHandle.approve`; one
    submitted with ``wait_for_reply_s`` waits for :meth:`RunHandle.reply`.
    """
    spec = RunSpec.model_validate(spec_data)
    worker = runtime.current()
    agent = worker.agent(spec)
    store = worker.store()
    journal = Journal(session_io(store), spec.session)
    session = await open_durable_session(store, spec.session, journal)
    boundary = DbosBoundary(journal, deltas=worker.settings.deltas)
    stream = agent.stream(Message.from_json(spec.prompt), session=session, boundary=boundary)
    result: RunResult | None = None
    closed = False
    try:
        while True:
            result = await _publish(stream, journal)
            waits = (result.outcome is Outcome.SUSPENDED and bool(result.pending)) or (
                spec.wait_for_reply_s is not None
            )
            if waits:
                await journal.step("tether.flush")
            else:  # the run's end: no step needed after it
                await journal.finish()
                closed = True
            if result.outcome is Outcome.SUSPENDED and result.pending:
                decisions = await DBOS.recv_async(APPROVAL, timeout_seconds=spec.approval_timeout_s)
                if decisions is None:
                    break
                stream = agent.resume_stream(dict(decisions), session=session, boundary=boundary)
                continue
            if spec.wait_for_reply_s is None:
                break
            reply = await DBOS.recv_async(REPLY, timeout_seconds=spec.wait_for_reply_s)
            if reply is None or reply == END:
                break
            prompt = Message.from_json(str(reply))
            stream = agent.stream(prompt, session=session, boundary=boundary)
    except BaseException:
        # Publish what happened before the failure (the session may refuse more writes).
        with contextlib.suppress(Exception):
            await journal.step("tether.flush_events", write_session=False)
        raise
    finally:
        if not closed:
            await DBOS.close_stream_async(EVENTS)
    assert result is not None
    return result


async def _publish(stream: AsyncIterator[RunEvent], journal: Journal) -> RunResult:
    """Drive one run of the loop, journaling its events; its result."""
    result: RunResult | None = None
    async for event in stream:
        if type(event) is TextDelta or type(event) is ThinkingDelta:
            continue
        journal.event(event_to_dict(event))
        if type(event) is Done:
            result = event.result
    if result is None:  # the loop always ends with Done
        raise TetherError("The run ended without a result.")
    return result
