"""Run events to OpenTelemetry spans (GenAI semantic conventions) and metrics.

One :class:`OtelObserver` sees the events of every run of the agents it is registered
with (runs interleave: it files each event under :func:`tether.observe.current_run`):

- ``RunStart`` starts an ``invoke_agent`` span — a child of the ``execute_tool`` span of
  the call that started the run, if a tool did, else of whatever span is current;
- ``TurnEnd`` records a ``chat`` span (started back by the call's latency, so it lasts
  as long as the call did) with the provider, models, request parameters, token counts
  (cache read and write included), finish reason and time to first chunk; the ``Retry``
  events before it become its events;
- each tool call is an ``execute_tool`` span, started when the tool's body starts and
  made current around it (:meth:`OtelObserver.tool_scope`) so that HTTP clients there
  propagate it, and ended by its ``ToolEnd`` (a call that never ran spans its
  ``ToolEnd.duration``); calls still open when their run ends are ended as interrupted;
- ``Compaction`` and ``CacheWarning`` are events of the run's span; ``Done`` and
  ``RunAborted`` end it, with an error status when the run did not complete.

Every span goes through the public tracer API (``Tracer.start_span``, ``Span.end``), so
the application's sampler, span limits and span processors apply to tether's spans as to
any other; what is exported, and when, is the span processors' business. The names come
from :mod:`tether_otel.semconv`.

Message content (prompts, answers, tool arguments and results) is recorded only when
capture is on, and always passed through :func:`tether.scrub.scrub` first, as is every
error message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

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

from . import semconv as sc
from .instruments import Instruments

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["MAX_CONTENT", "OtelObserver"]

MAX_CONTENT = 8192
"""Characters kept of any captured content attribute."""

_Handler = Callable[["_Run", Any, int], None]

_FINISH_REASONS = {reason: (reason.value,) for reason in StopReason}
"""``gen_ai.response.finish_reasons`` by stop reason."""


def _cut(text: str) -> str:
    text = scrub(text)
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


@dataclass(slots=True)
class _Run:
    start: RunStart
    span: trace.Span
    context: Context
    """A context whose current span is the run's: the parent of its chat and tool spans."""
    base: dict[str, Any]
    """Attributes every chat span and metric of this run carries."""
    chat_name: str
    text: list[str] = field(default_factory=list)
    retries: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    tools: dict[str, trace.Span] = field(default_factory=dict)
    """The open ``execute_tool`` spans, by call id."""
    tool_names: dict[str, str] = field(default_factory=dict)
    """The tool name of each open ``execute_tool`` span, by call id."""
    chat_attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The attributes every chat span answered by a model starts with, by model."""
    labels: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """Metric attributes of chat calls by response model: (duration, input, output)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """With content capture: the run's messages so far, in the GenAI JSON form (the
    input of its next chat span)."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """With content capture: the tool calls of the latest model response."""
    pending: tuple[trace.Span, int, str, str] | None = None
    """A chat span that asked for tools, kept open until its calls are known:
    (span, end time, answer text, finish reason)."""
    request_started: int = 0
    """When the model request in flight was (about to be) sent, in ns."""


class OtelObserver:
    """An event observer tracing to ``tracer_provider`` (the global one when ``None``)
    and recording metrics to ``meter_provider`` (none when ``None``).

    :param capture_content: record prompts, answers, tool arguments and results.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        *,
        capture_content: bool = False,
    ) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer(
            "tether_otel", version("tether-otel"), schema_url=sc.SCHEMA_URL
        )
        self.instruments = Instruments.of(meter_provider) if meter_provider is not None else None
        self.capture_content = capture_content
        self._runs: dict[str, _Run] = {}
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
        self.observed_events = frozenset({RunStart, *self._handlers})
        """What the core hands it: no text delta unless content is captured."""

    def __call__(self, event: Any) -> None:
        """Handle one event of the run :func:`~tether.observe.current_run`."""
        kind = type(event)
        if kind is RunStart:
            self._start(event)
            return
        handler = self._handlers.get(kind)
        if handler is None:
            return
        start = current_run()
        run = self._runs.get(start.run_id) if start is not None else None
        if run is not None:
            handler(run, event, time.time_ns())

    def tool_scope(self, call: ToolCallInfo) -> AbstractContextManager[Any] | None:
        """Make the call's ``execute_tool`` span current in the tool's body (starting it
        now, unless its ``ToolStart`` was handled first: content capture)."""
        run = self._runs.get(call.run_id)
        if run is None:
            return None
        span = self._open_tool(run, call.call_id, call.name, time.time_ns())
        # The call's outcome and status come from its ToolEnd, not from how the body left.
        return trace.use_span(span, record_exception=False, set_status_on_exception=False)

    # -- runs ---------------------------------------------------------------------------------
    def _start(self, start: RunStart) -> None:
        parent: Context | None = None  # (None: the current context)
        if start.parent_run_id is not None and start.parent_call_id is not None:
            parent_run = self._runs.get(start.parent_run_id)
            tool = parent_run.tools.get(start.parent_call_id) if parent_run is not None else None
            if tool is not None:
                parent = trace.set_span_in_context(tool)
        model = _bare_model(start.model, start.provider)
        base = {sc.PROVIDER_NAME: start.provider, sc.REQUEST_MODEL: model}
        attributes: dict[str, Any] = {
            sc.OPERATION_NAME: sc.INVOKE_AGENT,
            **base,
            sc.CONVERSATION_ID: start.session_id,
            sc.RUN_ID: start.run_id,
        }
        if start.parent_run_id is not None:
            attributes[sc.RUN_PARENT_ID] = start.parent_run_id
        if start.temperature is not None:
            attributes[sc.REQUEST_TEMPERATURE] = start.temperature
        if start.max_output_tokens is not None:
            attributes[sc.REQUEST_MAX_TOKENS] = start.max_output_tokens
        span = self.tracer.start_span(
            sc.INVOKE_AGENT,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=int(start.started * 1e9),
        )
        run = self._runs[start.run_id] = _Run(
            start,
            span,
            trace.set_span_in_context(span),
            base,
            chat_name=sc.chat_span_name(model),
            request_started=int(start.started * 1e9),
        )
        if self.capture_content and start.prompt:
            run.history.append(_message("user", [_text_part(start.prompt)]))

    def _text(self, run: _Run, event: TextDelta, now: int) -> None:
        run.text.append(event.text)

    def _done(self, run: _Run, event: Done, now: int) -> None:
        result = event.result
        span = run.span
        usage = result.usage
        attributes: dict[str, Any] = {
            sc.USAGE_INPUT_TOKENS: usage.input_tokens,
            sc.USAGE_OUTPUT_TOKENS: usage.output_tokens,
            sc.USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read_tokens,
            sc.USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write_tokens,
            sc.RUN_OUTCOME: result.outcome.value,
            sc.RUN_TURNS: result.turns,
            sc.RUN_TOOL_CALLS: result.tool_calls,
            sc.RUN_TOOL_ERRORS: result.tool_errors,
            sc.RUN_RETRIES: result.retries,
        }
        if result.cost is not None:
            attributes[sc.COST_USD] = result.cost
        ratio = result.cache_hit_ratio
        if ratio is not None:
            attributes[sc.CACHE_HIT_RATIO] = ratio
        self._settle(run)
        if self.capture_content:
            if result.messages:
                attributes[sc.INPUT_MESSAGES] = _messages("user", result.messages[0].text)
            attributes[sc.OUTPUT_MESSAGES] = _messages("assistant", _output_text(result.output))
        error_type = None
        if not result.ok and _is_model_failure(result.error):
            self._failed_chat(run, result.error, now)
        if not result.ok:
            error_type = type(result.error).__name__ if result.error else result.outcome.value
            attributes[sc.ERROR_TYPE] = error_type
            message = scrub(str(result.error)) if result.error else result.outcome.value
            span.set_status(Status(StatusCode.ERROR, message))
        span.set_attributes(attributes)
        self._finish(run, result.duration, error_type, ratio, now)

    def _aborted(self, run: _Run, event: RunAborted, now: int) -> None:
        self._settle(run)
        span = run.span
        error_type = type(event.error).__name__
        message = scrub(str(event.error))
        if _is_model_failure(event.error):
            self._failed_chat(run, event.error, now)
        for at, attributes in run.retries:  # no chat span will carry them
            span.add_event(sc.EVENT_RETRY, attributes, at)
        run.retries.clear()
        span.add_event(
            sc.EVENT_EXCEPTION, {sc.EXCEPTION_TYPE: error_type, sc.EXCEPTION_MESSAGE: message}, now
        )
        span.set_attribute(sc.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, message or error_type))
        self._finish(run, event.duration, error_type, None, now)

    def _finish(
        self, run: _Run, duration: float, error_type: str | None, ratio: float | None, now: int
    ) -> None:
        instruments = self.instruments
        for call_id, span in run.tools.items():  # calls the run abandoned
            span.set_attributes({sc.TOOL_OUTCOME: "interrupted", sc.ERROR_TYPE: "tool_interrupted"})
            span.set_status(Status(StatusCode.ERROR, "the run ended before the call finished"))
            span.end(now)
            if instruments is not None:
                instruments.count_tool_call(run.tool_names.get(call_id, ""), "interrupted")
        run.tools.clear()
        run.span.end(now)
        del self._runs[run.start.run_id]
        if instruments is not None:
            attributes = {sc.OPERATION_NAME: sc.INVOKE_AGENT, **run.base}
            if error_type is not None:
                attributes[sc.ERROR_TYPE] = error_type
            instruments.duration.record(duration, attributes)
            if ratio is not None:
                instruments.cache_hit_ratio.record(ratio, run.base)

    # -- model calls ----------------------------------------------------------------------------
    def _turn_end(self, run: _Run, event: TurnEnd, now: int) -> None:
        usage = event.usage
        attributes = dict(self._chat_attributes(run, event.model))
        attributes[sc.RESPONSE_FINISH_REASONS] = _FINISH_REASONS[event.stop_reason]
        attributes[sc.USAGE_INPUT_TOKENS] = usage.input_tokens
        attributes[sc.USAGE_OUTPUT_TOKENS] = usage.output_tokens
        if usage.cache_read_tokens or usage.cache_write_tokens:
            attributes[sc.USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_tokens
            attributes[sc.USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_write_tokens
        if usage.reasoning_tokens:
            attributes[sc.USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
        if event.time_to_first_token is not None:
            attributes[sc.RESPONSE_TIME_TO_FIRST_CHUNK] = event.time_to_first_token
        if event.cost is not None:
            attributes[sc.COST_USD] = event.cost
        if run.retries:
            attributes[sc.ATTEMPTS] = 1 + len(run.retries)
        self._settle(run)
        text = ""
        if self.capture_content:
            text = "".join(run.text)
            run.text.clear()
            if run.history:
                attributes[sc.INPUT_MESSAGES] = _cut(json.dumps(run.history, ensure_ascii=False))
        span = self.tracer.start_span(
            run.chat_name,
            context=run.context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=now - int(event.latency * 1e9),
        )
        for at, retry in run.retries:
            span.add_event(sc.EVENT_RETRY, retry, at)
        run.retries.clear()
        run.request_started = now
        if self.capture_content:
            # the calls of this response are announced by the ToolStart events that
            # follow: the span gets its output when they are known (_settle)
            run.pending = (span, now, text, event.stop_reason.value)
        else:
            span.end(now)
        instruments = self.instruments
        if instruments is not None:
            labels = run.labels.get(event.model)
            if labels is None:
                labels = run.labels[event.model] = _chat_labels(
                    run.base, _bare_model(event.model, run.start.provider)
                )
            instruments.token_usage.record(usage.input_tokens, labels[1])
            instruments.token_usage.record(usage.output_tokens, labels[2])
            instruments.duration.record(event.latency, labels[0])

    def _settle(self, run: _Run) -> None:
        """End the chat span kept open for its tool calls, with its output messages, and
        add its answer to the run's history (content capture)."""
        pending, run.pending = run.pending, None
        if pending is None:
            return
        span, end, text, finish = pending
        parts = ([_text_part(text)] if text else []) + run.calls
        run.calls = []
        output = _message("assistant", parts)
        span.set_attribute(
            sc.OUTPUT_MESSAGES,
            _cut(json.dumps([{**output, "finish_reason": finish}], ensure_ascii=False)),
        )
        span.end(end)
        run.history.append(output)

    def _failed_chat(self, run: _Run, error: BaseException | None, now: int) -> None:
        """A ``chat`` span for the model request the run ended on, with an error status."""
        error_type = type(error).__name__ if error is not None else "error"
        message = scrub(str(error)) if error is not None else error_type
        attributes: dict[str, Any] = {
            sc.OPERATION_NAME: sc.CHAT,
            **run.base,
            sc.ERROR_TYPE: error_type,
        }
        if run.retries:
            attributes[sc.ATTEMPTS] = 1 + len(run.retries)
        if self.capture_content and run.history:
            attributes[sc.INPUT_MESSAGES] = _cut(json.dumps(run.history, ensure_ascii=False))
        span = self.tracer.start_span(
            run.chat_name,
            context=run.context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=min(run.request_started, now),
        )
        for at, retry in run.retries:
            span.add_event(sc.EVENT_RETRY, retry, at)
        run.retries.clear()
        span.add_event(
            sc.EVENT_EXCEPTION, {sc.EXCEPTION_TYPE: error_type, sc.EXCEPTION_MESSAGE: message}, now
        )
        span.set_status(Status(StatusCode.ERROR, message or error_type))
        span.end(now)

    def _chat_attributes(self, run: _Run, model: str) -> dict[str, Any]:
        """The attributes every chat span of ``run`` answered by ``model`` starts with."""
        attributes = run.chat_attributes.get(model)
        if attributes is None:
            start = run.start
            attributes = {
                sc.OPERATION_NAME: sc.CHAT,
                **run.base,
                sc.RESPONSE_MODEL: _bare_model(model, start.provider),
            }
            if start.temperature is not None:
                attributes[sc.REQUEST_TEMPERATURE] = start.temperature
            if start.max_output_tokens is not None:
                attributes[sc.REQUEST_MAX_TOKENS] = start.max_output_tokens
            run.chat_attributes[model] = attributes
        return attributes

    def _retry(self, run: _Run, event: Retry, now: int) -> None:
        run.text.clear()  # the failed attempt's deltas are not part of the answer
        run.retries.append(
            (
                now,
                {
                    sc.RETRY_ATTEMPT: event.attempt,
                    sc.RETRY_DELAY_S: event.delay,
                    sc.ERROR_TYPE: type(event.error).__name__,
                    sc.EXCEPTION_MESSAGE: scrub(str(event.error)),
                },
            )
        )

    def _compaction(self, run: _Run, event: Compaction, now: int) -> None:
        run.span.add_event(
            sc.EVENT_COMPACTION,
            {
                sc.COMPACTION_STRATEGY: event.strategy,
                sc.COMPACTION_TOKENS_BEFORE: event.tokens_before,
                sc.COMPACTION_TOKENS_AFTER: event.tokens_after,
                sc.COMPACTION_MESSAGES_BEFORE: event.messages_before,
                sc.COMPACTION_MESSAGES_AFTER: event.messages_after,
            },
            now,
        )

    def _cache_warning(self, run: _Run, event: CacheWarning, now: int) -> None:
        run.span.add_event(
            sc.EVENT_CACHE_WARNING,
            {
                sc.CACHE_HIT_RATIO: event.hit_ratio,
                sc.CACHE_THRESHOLD: event.threshold,
                sc.RUN_TURNS: event.turns,
            },
            now,
        )

    # -- tools ------------------------------------------------------------------------------------
    def _tool_start(self, run: _Run, event: ToolStart, now: int) -> None:
        run.calls.append(
            {
                "type": "tool_call",
                "id": event.call_id,
                "name": event.name,
                "arguments": event.arguments,
            }
        )
        span = self._open_tool(run, event.call_id, event.name, now)
        span.set_attribute(
            sc.TOOL_CALL_ARGUMENTS,
            _cut(json.dumps(event.arguments, default=str, ensure_ascii=False)),
        )

    def _open_tool(self, run: _Run, call_id: str, name: str, now: int) -> trace.Span:
        """The call's ``execute_tool`` span: open already (its body started, or its
        ``ToolStart`` was handled), else started now, at ``now``."""
        span = run.tools.get(call_id)
        if span is None:
            span = run.tools[call_id] = self._tool_span(run, call_id, name, now)
            run.tool_names[call_id] = name
        return span

    def _tool_span(self, run: _Run, call_id: str, name: str, start_time: int) -> trace.Span:
        return self.tracer.start_span(
            sc.tool_span_name(name),
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes={
                sc.OPERATION_NAME: sc.EXECUTE_TOOL,
                sc.TOOL_NAME: name,
                sc.TOOL_TYPE: "function",
                sc.TOOL_CALL_ID: call_id,
            },
            start_time=start_time,
        )

    def _tool_end(self, run: _Run, event: ToolEnd, now: int) -> None:
        # started when its body started (or its ToolStart was handled); else it never ran
        span = run.tools.pop(event.call_id, None) or self._tool_span(
            run, event.call_id, event.name, now - int(event.duration * 1e9)
        )
        run.tool_names.pop(event.call_id, None)
        outcome = "interrupted" if event.interrupted else "error" if event.result.is_error else "ok"
        span.set_attribute(sc.TOOL_OUTCOME, outcome)
        if outcome != "ok":
            span.set_attribute(
                sc.ERROR_TYPE, "tool_interrupted" if event.interrupted else "tool_error"
            )
            span.set_status(Status(StatusCode.ERROR, _cut(event.result.text)[:200]))
        if self.capture_content:
            span.set_attribute(sc.TOOL_CALL_RESULT, _cut(event.result.text))
            self._settle(run)
            run.history.append(
                _message(
                    "tool",
                    [
                        {
                            "type": "tool_call_response",
                            "id": event.call_id,
                            "response": event.result.text,
                        }
                    ],
                )
            )
        span.end(now)
        run.request_started = now
        if self.instruments is not None:
            self.instruments.count_tool_call(event.name, outcome)


def _chat_labels(base: dict[str, Any], response_model: str) -> tuple[dict[str, Any], ...]:
    chat = {sc.OPERATION_NAME: sc.CHAT, **base, sc.RESPONSE_MODEL: response_model}
    return chat, {**chat, sc.TOKEN_TYPE: "input"}, {**chat, sc.TOKEN_TYPE: "output"}


def _bare_model(model: str, provider: str) -> str:
    """``claude-sonnet-4-5`` from ``anthropic/claude-sonnet-4-5``."""
    prefix = f"{provider}/"
    return model[len(prefix) :] if model.startswith(prefix) else model


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def _message(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "parts": parts}


def _output_text(output: Any) -> str:
    """A run's output as text: structured output (a pydantic model, a dataclass, a
    list...) as JSON."""
    if isinstance(output, str):
        return output
    dump = getattr(output, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    return json.dumps(output, default=str, ensure_ascii=False)


def _is_model_failure(error: BaseException | None) -> bool:
    from tether.errors import ProviderError

    return isinstance(error, ProviderError)


def _messages(role: str, text: str, finish_reason: str | None = None) -> str:
    """One message in the GenAI conventions' JSON form, scrubbed and cut."""
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return _cut(json.dumps([message], ensure_ascii=False))
