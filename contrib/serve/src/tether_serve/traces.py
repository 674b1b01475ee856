"""A run's trace over HTTP: the events the run streamed, and the run log's trace tree.

``GET /v1/runs/{id}/trace`` answers ``{"run", "events", "trace", "trace_note"}``:

- ``events``: every event of the run as it was streamed (:func:`tether.event_to_dict`),
  each with its ``seq`` (the SSE ``id``), from the server's memory while the run is
  retained (``retained_runs``);
- ``trace``: the run's tree as ``tether trace RUN --json`` prints it (turns, model calls
  with latency and tokens, tool calls, retries, compactions, nested runs), read from the
  run log by the tether run id of the run's ``run_start`` event, or ``null``;
- ``trace_note``: why ``trace`` is ``null`` (the run log is off, or has no such run).

The run log is scrubbed of secrets before anything is written to it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tether.runlog import RunLog, RunNotFound, open_run_log

from .runs import RunRecord

__all__ = ["TraceReader", "span_to_dict"]


def span_to_dict(span: Any) -> dict[str, Any]:
    """A run log span tree as JSON: ``kind``, ``title``, ``start``, ``duration``,
    ``status``, ``details`` and ``children``."""
    return {
        "kind": span.kind,
        "title": span.title,
        "start": span.start,
        "duration": span.duration,
        "status": span.status,
        "details": span.details,
        "children": [span_to_dict(child) for child in span.children],
    }


class TraceReader:
    """Reads runs' traces from the run log at ``path`` (``None``: the run log is off)."""

    def __init__(self, path: Path | None, *, deadline_s: float = 10.0) -> None:
        self.path = path
        self.deadline_s = deadline_s

    async def trace(self, run: RunRecord) -> dict[str, Any]:
        """The trace document of ``run`` (see the module docstring)."""
        events = [{"seq": seq, **event} for seq, event in enumerate(list(run.events), 1)]
        tree, note = await self._tree(run)
        return {"run": run.summary(), "events": events, "trace": tree, "trace_note": note}

    async def _tree(self, run: RunRecord) -> tuple[dict[str, Any] | None, str | None]:
        if self.path is None:
            return None, "The run log is off; only the streamed events are available."
        tether_run = next(
            (e.get("run_id") for e in run.events if e.get("type") == "run_start"), None
        )
        if not isinstance(tether_run, str) or not tether_run:
            return None, "The run ended before it started a model turn; nothing was recorded."
        log = open_run_log(self.path)
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(_read, log, tether_run, run.done), self.deadline_s
            ), None
        except RunNotFound:
            return None, "The run is not in the run log (yet): it records a run when it ends."
        except TimeoutError:
            return None, f"The run log did not answer within {self.deadline_s} s."


def _read(log: RunLog, run_id: str, done: bool) -> dict[str, Any]:
    from tether.runlog.trace import build_trace

    if done:
        log.flush()  # a run just ended may still be queued for writing
    row = log.get(run_id)
    if row.run_id != run_id:  # a prefix matched another run: not this one
        raise RunNotFound(run_id)
    return span_to_dict(build_trace(log, row))
