"""Assembling a streamed Responses API answer into tether events and one message.

Deltas (``response.output_text.delta``, ``response.reasoning_summary_text.delta``, ...)
are handed on as they arrive. The finished items of ``response.output_item.done`` are
the source of the message: they carry the complete function-call arguments and the
reasoning item's ``encrypted_content``, which the ``added`` events may not. Reasoning
items become :class:`~tether.messages.ThinkingBlock` s with the extra fields needed to
replay them (``item_id``, ``summary``); text and function-call blocks keep their
``item_id`` so a replayed reasoning item goes back with its own items. A function call
is announced complete (``ToolCallReady``) at its ``response.output_item.done``.
"""

from __future__ import annotations

from typing import Any

from tether.errors import ProviderConnectionError
from tether.events import TextDelta, ThinkingDelta
from tether.messages import (
    Block,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)
from tether.provider import ModelResponse, ProviderEvent, ToolCallReady

from ..errors import ErrorContext, from_stream_error
from ..history import assistant_response, parse_arguments

__all__ = ["ResponsesAssembler", "responses_usage"]

_NONE: tuple[ProviderEvent, ...] = ()
_SEPARATOR = "\n\n"


class ResponsesAssembler:
    """Feed it each streamed event; :meth:`finish` gives the ``ModelResponse``."""

    __slots__ = ("_calls", "_ctx", "_items", "_model_string", "_response")

    def __init__(self, model_string: str, ctx: ErrorContext) -> None:
        self._model_string = model_string
        self._ctx = ctx
        self._items: dict[int, Any] = {}
        self._response: Any = None
        self._calls = 0

    def feed(self, event: Any) -> tuple[ProviderEvent, ...]:
        """The events carried by one streamed event. Raises the matching tether error
        for ``error`` and ``response.failed`` events."""
        kind = event.type
        if kind == "response.output_text.delta":
            return (TextDelta(event.delta),)
        if (
            kind == "response.reasoning_summary_text.delta"
            or kind == "response.reasoning_text.delta"
        ):
            return (ThinkingDelta(event.delta),)
        return self._other(kind, event)

    def _other(self, kind: str, event: Any) -> tuple[ProviderEvent, ...]:
        if kind == "response.output_item.done":
            item = event.item
            self._items[event.output_index] = item
            if item.type == "function_call":
                self._calls += 1
                return (ToolCallReady(_call(item), self._calls - 1),)
        elif kind == "response.reasoning_summary_part.added":
            if event.summary_index > 0:
                return (ThinkingDelta(_SEPARATOR),)
        elif kind == "response.refusal.delta":
            return (TextDelta(event.delta),)
        elif kind == "response.completed" or kind == "response.incomplete":
            self._response = event.response
        elif kind == "response.failed":
            error = getattr(event.response, "error", None)
            code = getattr(error, "code", None)
            message = getattr(error, "message", None) or "the response failed"
            raise from_stream_error(code, message, self._ctx)
        elif kind == "error":
            raise from_stream_error(
                getattr(event, "code", None), getattr(event, "message", ""), self._ctx
            )
        return _NONE

    def finish(self) -> ModelResponse:
        """The assembled response. Raises ``ProviderConnectionError`` if the stream ended
        without ``response.completed`` or ``response.incomplete`` (a cut connection)."""
        response = self._response
        if response is None:
            raise ProviderConnectionError(
                f"The {self._ctx.label} stream ended before the response was complete.",
                provider=self._ctx.provider,
            )
        items = [self._items[i] for i in sorted(self._items)] or list(response.output or ())
        blocks: list[Block] = []
        refused = False
        has_calls = False
        for item in items:
            kind = item.type
            if kind == "reasoning":
                blocks.append(_thinking(item))
            elif kind == "message":
                for part in item.content or ():
                    if part.type == "output_text":
                        blocks.append(_text(part.text, item))
                    elif part.type == "refusal":
                        refused = True
                        blocks.append(TextBlock(text=part.refusal))
            elif kind == "function_call":
                has_calls = True
                blocks.append(_call(item))
        stop = _stop_reason(response, refused=refused, has_calls=has_calls)
        usage = responses_usage(response.usage)
        return assistant_response(blocks, stop, usage, self._model_string)


def _call(item: Any) -> ToolCallBlock:
    arguments, invalid = parse_arguments(item.arguments or "")
    call = {"id": item.call_id, "name": item.name, "arguments": arguments, "item_id": item.id}
    if invalid is not None:
        call["raw_arguments"] = invalid
    return ToolCallBlock.model_validate(call)


def _thinking(item: Any) -> ThinkingBlock:
    summary = [part.text for part in item.summary or ()]
    text = _SEPARATOR.join(summary)
    if not text and getattr(item, "content", None):
        text = "".join(part.text for part in item.content)
    return ThinkingBlock.model_validate(
        {
            "text": text,
            "signature": getattr(item, "encrypted_content", None),
            "item_id": item.id,
            "summary": summary,
        }
    )


def _text(text: str, item: Any) -> TextBlock:
    fields: dict[str, Any] = {"text": text, "item_id": item.id}
    phase = getattr(item, "phase", None)
    if phase is not None:
        fields["phase"] = phase
    return TextBlock.model_validate(fields)


def _stop_reason(response: Any, *, refused: bool, has_calls: bool) -> StopReason:
    if response.status == "incomplete":
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None)
        if reason == "content_filter":
            return StopReason.REFUSAL
        return StopReason.MAX_TOKENS
    if refused:
        return StopReason.REFUSAL
    return StopReason.TOOL_USE if has_calls else StopReason.END_TURN


def responses_usage(raw: Any) -> Usage:
    """tether usage from a Responses ``usage`` object (absent fields count 0)."""
    if raw is None:
        return Usage()
    details = getattr(raw, "input_tokens_details", None)
    output = getattr(raw, "output_tokens_details", None)
    return Usage(
        input_tokens=raw.input_tokens or 0,
        output_tokens=raw.output_tokens or 0,
        cache_read_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
        cache_write_tokens=(getattr(details, "cache_write_tokens", None) or 0) if details else 0,
        reasoning_tokens=(getattr(output, "reasoning_tokens", None) or 0) if output else 0,
    )
