"""Run events to OpenTelemetry spans (GenAI semantic conventions) and metrics.

One :class:`OtelObserver` sees the events of every run of the agents it is registered
with (runs interleave: it files each event under :func:`tether.observe.current_run`):

- ``RunStart`` opens an ``invoke_agent`` span — a child of the ``execute_tool`` span of
  the call that started the run, if a tool did, else of whatever span is current;
- ``TurnEnd`` records a ``chat`` span (backdated by the call's latency) with the provider,
  models, request parameters, token counts (cache read and write included), finish
  reason and time to first chunk; the ``Retry`` events before it become its events;
- each tool call is an ``execute_tool`` span, opened when the tool's body starts and made
  current around it (:meth:`tool_scope`) so HTTP clients there can propagate it, and
  ended by its ``ToolEnd`` (a call that never ran spans its ``ToolEnd.duration``);
- ``Compaction`` and ``CacheWarning`` are events of the run's span; ``Done`` and
  ``RunAborted`` end it, with an error status when the run did not complete.

Message content (prompts, answers, tool arguments and results) is recorded only when
capture is on, and always passed through :func:`tether.scrub.scrub` first, as is every
error message.

It is a :class:`tether.observe.BatchObserver`: only ``RunStart`` comes as it happens (a
sub-agent's run needs its span at once); the core hands it a run's other events that it
handles in batches, each with the time it came, so spans keep their times and reach the
span processor (which batches them for seconds anyway) at most
:data:`tether.observe.BATCH_DELAY_S` later. ``ToolStart`` is among them only when content
is captured (for the call's arguments; its span is opened then if the body has not
started yet).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import SpanContext, SpanKind

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
from tether.messages import StopReason
from tether.observe import ToolCallInfo, current_run
from tether.scrub import scrub

from .instruments import Instruments
from .spans import OpenSpan, SpanTemplate, writer_for

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["MAX_CONTENT", "OtelObserver"]

MAX_CONTENT = 8192
"""Characters kept of any captured content attribute."""

_Handler = Callable[["_Run", Any, int], None]

_FINISH_REASONS = {reason: (reason.value,) for reason in StopReason}
"""``gen_ai.response.finish_reasons`` by stop reason."""
_CLIENT = SpanKind.CLIENT
_INTERNAL = SpanKind.INTERNAL


def _cut(text: str) -> str:
    text = scrub(text)
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


@dataclass(slots=True)
class _Run:
    start: RunStart
    span: OpenSpan
    base: dict[str, Any]
    """Attributes every chat span and metric of this run carries."""
    text: list[str] = field(default_factory=list)
    retries: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    tools: dict[str, OpenSpan] = field(default_factory=dict)
    tool_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    """(tool name, outcome) -> calls, added to the counters when the run ends (with
    metrics on)."""
    labels: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """Metric attributes of chat calls by response model: (duration, input, output)."""
    chats: dict[str, SpanTemplate] = field(default_factory=dict)
    """The template of the run's chat spans, by response model."""
    tool_spans: dict[str, SpanTemplate] = field(default_factory=dict)
    """The template of the run's ``execute_tool`` spans, by tool name."""
    chat_name: str = ""
    """The name of the run's chat spans (``chat <model>``)."""


class OtelObserver:
    """An event observer exporting spans to ``tracer_provider`` and metrics to
    ``meter_provider`` (none when ``None``).

    :param capture_content: record prompts, answers, tool arguments and results.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        *,
        capture_content: bool = False,
    ) -> None:
        package_version = version("tether-otel")
        provider = tracer_provider or trace.get_tracer_provider()
        self.writer = writer_for(provider, package_version)
        self.instruments = (
            Instruments.create(meter_provider, package_version) if meter_provider else None
        )
        self.capture_content = capture_content
        self._runs: dict[str, _Run] = {}
        self._tools: dict[str, dict[str, Any]] = {}
        """The fixed attributes of each tool's spans, by tool name (the same mapping in
        every run, encoded once)."""
        self._handlers: dict[type, _Handler] = {
            TurnEnd: self._turn_end,
            ToolEnd: self._tool_end,
            Retry: self._retry,
            Compaction: self._compaction,
            CacheWarning: self._cache_warning,
            Done: self._done,
            RunAborted: self._aborted,
        }
        if capture_content:  # a call's arguments, and the model's answers
            self._handlers[ToolStart] = self._tool_start
            self._handlers[TextDelta] = self._text
        self.batched_events = frozenset(self._handlers)
        """What the core hands over in batches: the events there are handlers for."""

    # -- dispatch ---------------------------------------------------------------------------
    immediate_events = frozenset({RunStart})
    """What the core hands over as it happens; the rest comes to :meth:`observe_batch`."""

    def __call__(self, event: Any) -> None:
        """Handle one event now (``RunStart``; any event, from a core that does not
        batch)."""
        kind = type(event)
        if kind is RunStart:
            self._start(event)
            return
        handler = self._handlers.get(kind)
        if handler is not None:
            run = self._current()
            if run is not None:
                try:
                    handler(run, event, time.time_ns())
                finally:
                    self.writer.flush()

    def observe_batch(self, start: RunStart, events: Sequence[tuple[Any, int]]) -> None:
        """Handle events of the run ``start`` that came at the times given, in order (a
        handler that raises is logged and the rest are handled)."""
        run = self._runs.get(start.run_id)
        if run is None:
            return
        handlers = self._handlers
        try:
            for event, now in events:
                handler = handlers.get(type(event))
                if handler is not None:
                    try:
                        handler(run, event, now)
                    except Exception:
                        logging.getLogger("tether.observers").exception(
                            "event observer %r raised on %s", self, type(event).__name__
                        )
        finally:
            self.writer.flush()

    def _current(self) -> _Run | None:
        start = current_run()
        return self._runs.get(start.run_id) if start is not None else None

    def tool_scope(self, call: ToolCallInfo) -> AbstractContextManager[Any] | None:
        """Make the call's ``execute_tool`` span current in the tool's body (opening it
        now, unless its ``ToolStart`` was handled first: content capture)."""
        run = self._runs.get(call.run_id)
        if run is None:
            return None
        return self._open_tool(run, call.call_id, call.name, time.time_ns()).scope()

    # -- runs ---------------------------------------------------------------------------------
    def _start(self, start: RunStart) -> None:
        parent_context: OpenSpan | SpanContext | None = None
        if start.parent_run_id is not None and start.parent_call_id is not None:
            parent = self._runs.get(start.parent_run_id)
            tool = parent.tools.get(start.parent_call_id) if parent is not None else None
            if tool is not None:
                parent_context = tool
        if parent_context is None:
            current = trace.get_current_span().get_span_context()
            parent_context = current if current.is_valid else None
        model = _bare_model(start.model, start.provider)
        base = {"gen_ai.provider.name": start.provider, "gen_ai.request.model": model}
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            **base,
            "gen_ai.conversation.id": start.session_id,
            "tether.run.id": start.run_id,
        }
        if start.parent_run_id is not None:
            attributes["tether.run.parent_id"] = start.parent_run_id
        if start.temperature is not None:
            attributes["gen_ai.request.temperature"] = start.temperature
        if start.max_output_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = start.max_output_tokens
        writer = self.writer
        template = writer.template(
            "invoke_agent", SpanKind.INTERNAL, parent_context, attributes=attributes
        )
        span = writer.open(template, attributes, int(start.started * 1e9))
        self._runs[start.run_id] = _Run(start, span, base, chat_name=f"chat {model}")

    def _text(self, run: _Run, event: TextDelta, now: int) -> None:
        run.text.append(event.text)

    def _done(self, run: _Run, event: Done, now: int) -> None:
        result = event.result
        span = run.span
        usage = result.usage
        span.attributes.update(
            {
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
                "tether.run.outcome": result.outcome.value,
                "tether.run.turns": result.turns,
                "tether.run.tool_calls": result.tool_calls,
                "tether.run.tool_errors": result.tool_errors,
                "tether.run.retries": result.retries,
            }
        )
        if result.cost is not None:
            span.attributes["tether.cost.usd"] = result.cost
        ratio = result.cache_hit_ratio
        if ratio is not None:
            span.attributes["tether.cache.hit_ratio"] = ratio
        if self.capture_content:
            if result.messages:
                span.attributes["gen_ai.input.messages"] = _messages(
                    "user", result.messages[0].text
                )
            span.attributes["gen_ai.output.messages"] = _messages("assistant", result.output)
        error_type = None
        if not result.ok:
            error_type = type(result.error).__name__ if result.error else result.outcome.value
            message = scrub(str(result.error)) if result.error else result.outcome.value
            span.attributes["error.type"] = error_type
            span.fail(message)
        self._finish(run, result.duration, error_type, ratio, now)

    def _aborted(self, run: _Run, event: RunAborted, now: int) -> None:
        error_type = type(event.error).__name__
        for at, attributes in run.retries:
            run.span.event("gen_ai.retry", attributes, at)
        run.span.event(
            "exception",
            {"exception.type": error_type, "exception.message": scrub(str(event.error))},
            now,
        )
        run.span.attributes["error.type"] = error_type
        run.span.fail(scrub(str(event.error)) or error_type)
        self._finish(run, event.duration, error_type, None, now)

    def _finish(
        self, run: _Run, duration: float, error_type: str | None, ratio: float | None, now: int
    ) -> None:
        for span in run.tools.values():  # calls the run abandoned
            span.attributes["tether.tool.outcome"] = "interrupted"
            span.fail("the run ended before the call finished")
            span.end(now)
        run.span.end(now)
        del self._runs[run.start.run_id]
        instruments = self.instruments
        if instruments is not None:
            for (name, outcome), count in run.tool_counts.items():
                instruments.count_tool_calls(name, outcome, count)
            attributes = {"gen_ai.operation.name": "invoke_agent", **run.base}
            if error_type is not None:
                attributes["error.type"] = error_type
            instruments.record(instruments.duration, duration, attributes)
            if ratio is not None:
                instruments.record(instruments.cache_hit_ratio, ratio, run.base)

    # -- model calls ----------------------------------------------------------------------------
    def _turn_end(self, run: _Run, event: TurnEnd, now: int) -> None:
        usage = event.usage
        chat = run.chats.get(event.model)
        if chat is None:
            chat = run.chats[event.model] = self.writer.template(
                run.chat_name, _CLIENT, run.span, _chat_attributes(run, event.model)
            )
        attributes: dict[str, Any] = {
            "gen_ai.response.finish_reasons": _FINISH_REASONS[event.stop_reason],
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
        }
        if usage.cache_read_tokens or usage.cache_write_tokens:
            attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
            attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
        if usage.reasoning_tokens:
            attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
        if event.time_to_first_token is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = event.time_to_first_token
        if event.cost is not None:
            attributes["tether.cost.usd"] = event.cost
        events = None
        if run.retries:
            attributes["tether.attempts"] = 1 + len(run.retries)
            events = [("gen_ai.retry", retry, at) for at, retry in run.retries]
            run.retries.clear()
        if self.capture_content:
            text = "".join(run.text)
            run.text.clear()
            attributes["gen_ai.output.messages"] = _messages(
                "assistant", text, event.stop_reason.value
            )
        self.writer.record(chat, attributes, now - int(event.latency * 1e9), now, events)
        instruments = self.instruments
        if instruments is not None:
            labels = run.labels.get(event.model)
            if labels is None:
                labels = run.labels[event.model] = _chat_labels(
                    run.base, _bare_model(event.model, run.start.provider)
                )
            tokens = instruments.token_usage
            instruments.record(tokens, usage.input_tokens, labels[1])
            instruments.record(tokens, usage.output_tokens, labels[2])
            instruments.record(instruments.duration, event.latency, labels[0])

    def _retry(self, run: _Run, event: Retry, now: int) -> None:
        run.text.clear()  # the failed attempt's deltas are not part of the answer
        run.retries.append(
            (
                now,
                {
                    "tether.retry.attempt": event.attempt,
                    "tether.retry.delay_s": event.delay,
                    "error.type": type(event.error).__name__,
                    "exception.message": scrub(str(event.error)),
                },
            )
        )

    def _compaction(self, run: _Run, event: Compaction, now: int) -> None:
        run.span.event(
            "tether.compaction",
            {
                "tether.compaction.strategy": event.strategy,
                "tether.compaction.tokens_before": event.tokens_before,
                "tether.compaction.tokens_after": event.tokens_after,
                "tether.compaction.messages_before": event.messages_before,
                "tether.compaction.messages_after": event.messages_after,
            },
            now,
        )

    def _cache_warning(self, run: _Run, event: CacheWarning, now: int) -> None:
        run.span.event(
            "tether.cache_warning",
            {
                "tether.cache.hit_ratio": event.hit_ratio,
                "tether.cache.threshold": event.threshold,
                "tether.run.turns": event.turns,
            },
            now,
        )

    # -- tools ------------------------------------------------------------------------------------
    def _tool_start(self, run: _Run, event: ToolStart, now: int) -> None:
        span = self._open_tool(run, event.call_id, event.name, now)
        if self.capture_content:
            span.attributes["gen_ai.tool.call.arguments"] = _cut(
                json.dumps(event.arguments, default=str, ensure_ascii=False)
            )

    def _open_tool(self, run: _Run, call_id: str, name: str, now: int) -> OpenSpan:
        """The call's ``execute_tool`` span: open already (its body started, or its
        ``ToolStart`` was handled), else opened now, starting at ``now``."""
        span = run.tools.get(call_id)
        if span is None:
            span = run.tools[call_id] = self._tool_span(run, call_id, name, now)
        return span

    def _tool_span(self, run: _Run, call_id: str, name: str, start_time: int) -> OpenSpan:
        template = run.tool_spans.get(name)
        if template is None:
            fixed = self._tools.get(name)
            if fixed is None:
                if len(self._tools) >= 1024:
                    self._tools.clear()
                fixed = self._tools[name] = _tool_attributes(name)
            template = run.tool_spans[name] = self.writer.template(
                f"execute_tool {name}", _INTERNAL, run.span, fixed
            )
        return self.writer.open(template, {"gen_ai.tool.call.id": call_id}, start_time)

    def _tool_end(self, run: _Run, event: ToolEnd, now: int) -> None:
        # opened when its body started (or its ToolStart was handled); else it never ran
        span = run.tools.pop(event.call_id, None) or self._tool_span(
            run, event.call_id, event.name, now - int(event.duration * 1e9)
        )
        outcome = "interrupted" if event.interrupted else "error" if event.result.is_error else "ok"
        span.attributes["tether.tool.outcome"] = outcome
        if outcome != "ok":
            span.attributes["error.type"] = (
                "tool_interrupted" if event.interrupted else "tool_error"
            )
            span.fail(_cut(event.result.text)[:200])
        if self.capture_content:
            span.attributes["gen_ai.tool.call.result"] = _cut(event.result.text)
        span.end(now)
        if self.instruments is not None:
            key = (event.name, outcome)
            run.tool_counts[key] = run.tool_counts.get(key, 0) + 1

    def runs_in_progress(self) -> Iterator[str]:
        """Ids of the runs whose spans are open (for diagnostics)."""
        return iter(list(self._runs))


def _chat_attributes(run: _Run, model: str) -> dict[str, Any]:
    """The attributes every chat span of ``run`` answered by ``model`` starts with."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        **run.base,
        "gen_ai.response.model": _bare_model(model, run.start.provider),
    }
    if run.start.temperature is not None:
        attributes["gen_ai.request.temperature"] = run.start.temperature
    if run.start.max_output_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = run.start.max_output_tokens
    return attributes


def _tool_attributes(name: str) -> dict[str, Any]:
    """The attributes every ``execute_tool`` span of the tool ``name`` starts with."""
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",
    }


def _chat_labels(base: dict[str, Any], response_model: str) -> tuple[dict[str, Any], ...]:
    chat = {"gen_ai.operation.name": "chat", **base, "gen_ai.response.model": response_model}
    return (
        chat,
        {**chat, "gen_ai.token.type": "input"},
        {**chat, "gen_ai.token.type": "output"},
    )


def _bare_model(model: str, provider: str) -> str:
    """``claude-sonnet-4-5`` from ``anthropic/claude-sonnet-4-5``."""
    prefix = f"{provider}/"
    return model[len(prefix) :] if model.startswith(prefix) else model


def _messages(role: str, text: str, finish_reason: str | None = None) -> str:
    """One message in the GenAI conventions' JSON form, scrubbed and cut."""
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return _cut(json.dumps([message], ensure_ascii=False))
