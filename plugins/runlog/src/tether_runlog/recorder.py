"""The event observer that turns each run's events into a :class:`RunRow` of the run log.

Text deltas are joined per model call. The row is queued for writing when the run ends
(``Done``, or ``RunAborted`` when it ended with an exception); on the writer thread,
before anything reaches the file, every string in it (arguments, results, errors, text)
is scrubbed of secrets (:func:`tether.scrub.scrub`) and then cut to
:data:`MAX_TEXT` characters. Scrubbing there keeps it off the event loop.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic_core import to_json

from tether.events import (
    CacheWarning,
    Compaction,
    Done,
    Retry,
    RunAborted,
    RunStart,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
)
from tether.observe import current_run
from tether.scrub import scrub

from .store import RunLog, RunRow

__all__ = ["MAX_TEXT", "RunRecorder"]

MAX_TEXT = 2000
"""Characters kept of any text, argument list or result."""


STOPPED_READING = (
    "Stopped before its end: whoever read the run's events stopped reading (its output was "
    "closed, as by `| head`, or the stream was closed early)."
)
"""The error recorded for a run whose event stream was closed before it ended."""


def _output_text(output: Any, text: str) -> str | None:
    """The run's answer as text: the text itself, or the structured output (a pydantic
    model, a dataclass, a dict, ...) as JSON."""
    if output is None:
        return text or None
    if isinstance(output, str):
        return output
    return to_json(output, fallback=str).decode()


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Recording:
    __slots__ = ("clock", "events", "retried", "row", "text")

    def __init__(self, start: RunStart) -> None:
        self.clock = time.perf_counter()
        self.row = RunRow(
            run_id=start.run_id,
            started=start.started,
            parent_run_id=start.parent_run_id,
            parent_call_id=start.parent_call_id,
            session_id=start.session_id,
            model=start.model,
            provider=start.provider,
        )
        self.events: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.retried = 0
        """Retries of the model call in progress."""

    def at(self) -> float:
        return round(time.perf_counter() - self.clock, 6)


class RunRecorder:
    """Records every run it observes into ``log`` (register it with ``register_observers``)."""

    observed_events = frozenset(
        {RunStart, TextDelta, TurnEnd, ToolStart, ToolEnd, Retry, Compaction}
        | {CacheWarning, Done, RunAborted}
    )
    """The events a row is made of; the core hands it no others."""

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self._runs: dict[str, _Recording] = {}

    def __call__(self, event: Any) -> None:
        kind = type(event)
        if kind is TextDelta:
            recording = self._current()
            if recording is not None:
                recording.text.append(event.text)
            return
        if kind is RunStart:
            self._runs[event.run_id] = _Recording(event)
            return
        recording = self._current()
        if recording is None:
            return
        if kind is TurnEnd:
            self._turn_end(recording, event)
        elif kind is ToolStart:
            self._tool_start(recording, event)
        elif kind is ToolEnd:
            self._tool_end(recording, event)
        elif kind is Retry:
            self._retry(recording, event)
        elif kind is Compaction:
            recording.row.compactions += 1
            recording.events.append(
                {
                    "t": recording.at(),
                    "type": "compaction",
                    "strategy": event.strategy,
                    "tokens_before": event.tokens_before,
                    "tokens_after": event.tokens_after,
                    "messages_before": event.messages_before,
                    "messages_after": event.messages_after,
                }
            )
        elif kind is CacheWarning:
            recording.events.append(
                {"t": recording.at(), "type": "cache_warning", "message": event.message}
            )
        elif kind is Done:
            self._done(recording, event)
        elif kind is RunAborted:
            self._aborted(recording, event)

    def _current(self) -> _Recording | None:
        run = current_run()
        return self._runs.get(run.run_id) if run is not None else None

    @staticmethod
    def _tool_start(recording: _Recording, event: ToolStart) -> None:
        recording.events.append(
            {
                "t": recording.at(),
                "type": "tool_start",
                "call_id": event.call_id,
                "name": event.name,
                "arguments": json.dumps(event.arguments, default=str, ensure_ascii=False),
            }
        )

    @staticmethod
    def _retry(recording: _Recording, event: Retry) -> None:
        recording.row.retries += 1
        recording.retried += 1
        recording.events.append(
            {
                "t": recording.at(),
                "type": "retry",
                "attempt": event.attempt,
                "delay": event.delay,
                "error": str(event.error),
                "error_type": type(event.error).__name__,
            }
        )
        recording.text.clear()  # the failed attempt's deltas are not in the history

    @staticmethod
    def _turn_end(recording: _Recording, event: TurnEnd) -> None:
        row = recording.row
        usage = event.usage
        row.turns += 1
        row.input_tokens += usage.input_tokens
        row.output_tokens += usage.output_tokens
        row.cache_read_tokens += usage.cache_read_tokens
        row.cache_write_tokens += usage.cache_write_tokens
        text = "".join(recording.text)
        recording.text.clear()
        attempts = 1 + recording.retried
        recording.retried = 0  # the next model call starts its own count
        recording.events.append(
            {
                "t": recording.at(),
                "type": "model_call",
                "model": event.model,
                "stop_reason": event.stop_reason.value,
                "latency": event.latency,
                "time_to_first_token": event.time_to_first_token,
                "attempts": attempts,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "cost": event.cost,
                "text": text,
            }
        )

    @staticmethod
    def _tool_end(recording: _Recording, event: ToolEnd) -> None:
        recording.events.append(
            {
                "t": recording.at(),
                "type": "tool_end",
                "call_id": event.call_id,
                "name": event.name,
                "is_error": event.is_error,
                "interrupted": event.interrupted,
                "duration": event.duration,
                "result": event.result.text,
            }
        )
        recording.row.tools.append(
            {
                "call_id": event.call_id,
                "name": event.name,
                "is_error": event.is_error,
                "interrupted": event.interrupted,
                "duration": event.duration,
            }
        )

    def _done(self, recording: _Recording, event: Done) -> None:
        result = event.result
        row = recording.row
        row.duration = result.duration
        row.outcome = result.outcome.value
        row.tool_calls = result.tool_calls
        row.tool_errors = result.tool_errors
        row.retries = result.retries
        row.cost = result.cost
        if result.cost_breakdown is not None:
            split = result.cost_breakdown
            row.cost_input, row.cost_output = split.input, split.output
            row.cost_cache_read, row.cost_cache_write = split.cache_read, split.cache_write
        if result.error is not None:
            row.error = str(result.error)
            row.error_type = type(result.error).__name__
        if result.messages:
            row.prompt = result.messages[0].text
        row.output = _output_text(result.output, result.text)
        self._finish(recording)

    def _aborted(self, recording: _Recording, event: RunAborted) -> None:
        row = recording.row
        row.duration = event.duration
        if isinstance(event.error, GeneratorExit):
            row.outcome = "cancelled"
            row.error = STOPPED_READING
        else:
            row.outcome = "error"
            row.error = str(event.error) or type(event.error).__name__
            row.error_type = type(event.error).__name__
        row.tool_calls = len(row.tools)
        row.tool_errors = sum(1 for t in row.tools if t["is_error"])
        self._finish(recording)

    def _finish(self, recording: _Recording) -> None:
        recording.row.events = recording.events
        del self._runs[recording.row.run_id]
        self.log.append(recording.row, self._scrub)

    def _scrub(self, row: RunRow) -> None:
        """Replace secrets in every string of ``row``, then cut long strings."""
        for name in ("error", "prompt", "output"):
            value = getattr(row, name)
            if value is not None:
                setattr(row, name, _cut(scrub(value)))
        row.events = [
            {
                key: _cut(scrub(value)) if isinstance(value, str) else value
                for key, value in event.items()
            }
            for event in row.events
        ]
