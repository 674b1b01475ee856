"""The durable run: the agent loop as one DBOS workflow."""

from __future__ import annotations

from dbos import DBOS

from tether.events import Done, TextDelta, ThinkingDelta, event_to_dict
from tether.messages import Message
from tether.result import RunResult

from . import runtime
from .boundary import EVENTS, DbosBoundary
from .session import open_durable_session
from .spec import RunSpec

__all__ = ["WORKFLOW", "durable_run"]

WORKFLOW = "tether.run"
REPLY = "tether.reply"
END = ""
"""Sent as a reply, ends a run that waits for replies."""


@DBOS.workflow(name=WORKFLOW)
async def durable_run(spec_data: dict[str, object]) -> RunResult:
    """Run ``spec`` (a :class:`RunSpec` as data) to its end, durably.

    The loop is tether's own (:meth:`tether.Agent.stream`) behind a
    :class:`~tether_dbos.boundary.DbosBoundary`: model requests, tool calls and session
    writes are steps; everything between them is replayed deterministically from their
    recorded results after a crash. Events other than deltas are written to the stream
    from the workflow (checkpointed, so a replay does not publish them twice).
    """
    spec = RunSpec.model_validate(spec_data)
    worker = runtime.current()
    agent = worker.agent(spec)
    session = await open_durable_session(worker.store(), spec.session)
    boundary = DbosBoundary(deltas=worker.settings.deltas)
    prompt = Message.from_json(spec.prompt)
    result: RunResult | None = None
    try:
        while True:
            async for event in agent.stream(prompt, session=session, boundary=boundary):
                if type(event) is TextDelta or type(event) is ThinkingDelta:
                    continue
                await DBOS.write_stream_async(EVENTS, event_to_dict(event))
                if type(event) is Done:
                    result = event.result
            if spec.wait_for_reply_s is None:
                break
            reply = await DBOS.recv_async(REPLY, timeout_seconds=spec.wait_for_reply_s)
            if reply is None or reply == END:
                break
            prompt = Message.from_json(str(reply))
    finally:
        await DBOS.close_stream_async(EVENTS)
    assert result is not None
    return result
