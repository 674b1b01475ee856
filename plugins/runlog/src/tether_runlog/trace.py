"""A recorded run as a tree of spans: what ``tether trace`` prints and draws.

The tree is plain data (:class:`Span`), built from a :class:`~tether_runlog.RunRow` and
its nested runs, so the terminal view and the HTML timeline show the same thing:

- the run, with its summary;
- one ``turn`` per model call, holding the ``model`` call (latency, time to first token,
  tokens, cost, stop reason), then the ``retry`` and ``compaction`` marks that happened
  during it, then its ``tool`` calls (arguments, outcome, result);
- under a tool call, the runs it started (sub-agents), recursively.

Times are seconds from the start of the top-level run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .store import RunLog, RunRow

__all__ = ["Span", "build_trace"]


@dataclass(slots=True)
class Span:
    """One node of the trace: a run, a turn, a model call, a tool call, or a mark (a
    retry, a compaction, a warning: ``duration`` 0)."""

    kind: str
    title: str
    start: float
    duration: float
    status: str = "ok"
    """``ok``, ``error`` or ``interrupted``."""
    details: dict[str, Any] = field(default_factory=dict)
    children: list[Span] = field(default_factory=list)

    @property
    def end(self) -> float:
        return self.start + self.duration

    def walk(self, depth: int = 0) -> list[tuple[int, Span]]:
        """This span and all below it, depth first, with their depths."""
        out = [(depth, self)]
        for child in self.children:
            out.extend(child.walk(depth + 1))
        return out


_RUN_STATUS = {"completed": "ok", "cancelled": "interrupted"}


def build_trace(log: RunLog, row: RunRow, offset: float = 0.0) -> Span:
    """The trace tree of ``row`` (a run read with :meth:`RunLog.get`), nested runs included.

    ``offset`` is when ``row`` started, relative to the top-level run.
    """
    children = {child.parent_call_id: child for child in log.children(row.run_id)}
    root = Span(
        kind="run",
        title=f"run {row.run_id[:12]} · {row.model}",
        start=offset,
        duration=row.duration or _last_time(row),
        status=_RUN_STATUS.get(row.outcome or "", "error"),
        details=_run_details(row),
    )
    turn: Span | None = None
    pending_marks: list[Span] = []
    tools: dict[str, Span] = {}
    for event in row.events:
        at = offset + float(event.get("t", 0.0))
        kind = event.get("type")
        if kind == "model_call":
            latency = float(event.get("latency") or 0.0)
            number = len([c for c in root.children if c.kind == "turn"]) + 1
            model = Span(
                kind="model",
                title=f"model call · {event.get('model')}",
                start=at - latency,
                duration=latency,
                details={k: v for k, v in event.items() if k not in ("t", "type")},
            )
            turn = Span(kind="turn", title=f"turn {number}", start=model.start, duration=latency)
            turn.children.append(model)
            turn.children.extend(pending_marks)
            pending_marks = []
            root.children.append(turn)
        elif kind in ("retry", "compaction", "cache_warning"):
            pending_marks.append(_mark(kind, event, at))
        elif kind == "tool_start":
            span = Span(
                kind="tool",
                title=str(event.get("name")),
                start=at,
                duration=0.0,
                status="running",
                details={"call_id": event.get("call_id"), "arguments": event.get("arguments")},
            )
            tools[str(event.get("call_id"))] = span
            (turn.children if turn is not None else root.children).append(span)
            nested = children.get(event.get("call_id"))
            if nested is not None:
                span.children.append(
                    build_trace(log, nested, offset + (nested.started - row.started))
                )
        elif kind == "tool_end":
            _end_tool(tools, event, at, turn.children if turn is not None else root.children)
    if pending_marks:  # marks after the last model call (e.g. a compaction after tools)
        (turn.children if turn is not None else root.children).extend(pending_marks)
    _stretch_turns(root)
    return root


def _stretch_turns(root: Span) -> None:
    """Make each turn span cover everything under it."""
    for top in root.children:
        if top.kind == "turn":
            top.duration = max([top.duration, *(c.end - top.start for c in top.children)])


def _end_tool(tools: dict[str, Span], event: dict[str, Any], at: float, parent: list[Span]) -> None:
    span = tools.get(str(event.get("call_id")))
    if span is None:  # answered without starting (interrupted before it ran)
        span = Span(kind="tool", title=str(event.get("name")), start=at, duration=0.0)
        parent.append(span)
    span.duration = max(at - span.start, float(event.get("duration") or 0.0))
    if event.get("interrupted"):
        span.status = "interrupted"
    else:
        span.status = "error" if event.get("is_error") else "ok"
    span.details["result"] = event.get("result")
    span.details["duration"] = event.get("duration")


def _mark(kind: str, event: dict[str, Any], at: float) -> Span:
    if kind == "retry":
        title = f"retry {event.get('attempt')}: {event.get('error_type')} (waited {float(event.get('delay') or 0):.1f}s)"
        status = "error"
    elif kind == "compaction":
        title = (
            f"compaction · {event.get('strategy')}: {event.get('tokens_before'):,} → "
            f"{event.get('tokens_after'):,} tokens"
        )
        status = "ok"
    else:
        title = "cache warning"
        status = "error"
    details = {k: v for k, v in event.items() if k not in ("t", "type")}
    return Span(kind=kind, title=title, start=at, duration=0.0, status=status, details=details)


def _last_time(row: RunRow) -> float:
    return max((float(e.get("t", 0.0)) for e in row.events), default=0.0)


def _run_details(row: RunRow) -> dict[str, Any]:
    details: dict[str, Any] = {
        "outcome": row.outcome,
        "turns": row.turns,
        "tool_calls": row.tool_calls,
        "tool_errors": row.tool_errors,
        "retries": row.retries,
        "compactions": row.compactions,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cache_read_tokens": row.cache_read_tokens,
        "cache_write_tokens": row.cache_write_tokens,
        "cache_hit_ratio": row.cache_hit_ratio,
        "cost": row.cost,
        "session_id": row.session_id,
        "prompt": row.prompt,
        "output": row.output,
    }
    if row.error:
        details["error"] = f"{row.error_type}: {row.error}" if row.error_type else row.error
    return details
