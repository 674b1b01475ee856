"""Stream assembly: Gemini ``GenerateContentResponse`` chunks → tether deltas and one message.

Each streamed chunk carries a few ``parts`` of the one candidate. Consecutive text parts
(or consecutive thought parts) are joined into one block; a ``thoughtSignature`` is kept
on the block of the part it came with, and that block is then closed, so a signed part is
never merged with a later one and replays exactly where the API put it:

- thought parts → :class:`~tether.messages.ThinkingBlock` (``signature``);
- text parts → :class:`~tether.messages.TextBlock` (extra field ``thought_signature``);
- function calls → :class:`~tether.messages.ToolCallBlock` (extra fields
  ``thought_signature`` and, when the API sent one, ``gemini_id``); a function-call part
  arrives whole, so each call is announced complete (``ToolCallReady``) with its part;
- a part that carries only a signature → ``ThinkingBlock(text="", signature=..., bare=True)``.

Signatures are stored as the standard base64 text the API sent. Gemini sends no call ids
(older models) so ids are assigned from the message id and the call's position: stable,
unique, and the same every time the message is read back.
"""

from __future__ import annotations

import base64
from typing import Any

from tether.errors import InvalidRequestError, ProviderConnectionError, ProviderError
from tether.events import TextDelta, ThinkingDelta
from tether.messages import (
    Block,
    ImageBlock,
    Message,
    MessageMeta,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
    new_id,
)
from tether.provider import ModelResponse, ToolCallReady

__all__ = ["StreamAssembler", "map_usage"]

_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
_RESAMPLE = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MALFORMED_RESPONSE"}
)
_CUT_OFF = frozenset({"MAX_TOKENS", "CONTINUATION"})

_TEXT = 1
_THOUGHT = 2


def _enum_value(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def encode_signature(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def map_usage(metadata: Any) -> Usage:
    """Gemini ``usageMetadata`` → :class:`Usage`. ``promptTokenCount`` already includes
    cached tokens; ``candidatesTokenCount`` excludes thoughts, which tether counts as output."""
    if metadata is None:
        return Usage()
    thoughts = metadata.thoughts_token_count or 0
    return Usage(
        input_tokens=(metadata.prompt_token_count or 0)
        + (metadata.tool_use_prompt_token_count or 0),
        output_tokens=(metadata.candidates_token_count or 0) + thoughts,
        cache_read_tokens=metadata.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


class StreamAssembler:
    """Collects the parts of one streamed response. Feed every part to :meth:`add_part`
    (it returns the delta to yield, if any) and every chunk to :meth:`add_chunk`, then
    call :meth:`finish` once."""

    __slots__ = (
        "_block_reason",
        "_blocks",
        "_calls",
        "_finish_message",
        "_finish_reason",
        "_kind",
        "_message_id",
        "_model",
        "_open_signature",
        "_texts",
        "_usage",
    )

    def __init__(self, model_string: str) -> None:
        self._model = model_string
        self._message_id = new_id()
        self._blocks: list[Block] = []
        self._kind = 0
        self._texts: list[str] = []
        self._open_signature: str | None = None
        self._calls = 0
        self._usage: Any = None
        self._finish_reason: str | None = None
        self._finish_message: str | None = None
        self._block_reason: str | None = None

    # -- parts ------------------------------------------------------------------------------
    def add_part(self, part: Any) -> TextDelta | ThinkingDelta | ToolCallReady | None:
        text = part.text
        raw_signature = part.thought_signature
        if text is not None:
            kind = _THOUGHT if part.thought else _TEXT
            if kind != self._kind or self._open_signature is not None:
                self._close()
                self._kind = kind
            self._texts.append(text)
            signature = encode_signature(raw_signature) if raw_signature else None
            if signature is not None:
                self._open_signature = signature
            if kind == _TEXT:
                return TextDelta(text) if text else None
            return ThinkingDelta(text, signature) if text or signature else None
        call = part.function_call
        if call is not None:
            self._close()
            return self._add_call(call, raw_signature)
        inline = part.inline_data
        if inline is not None and inline.data is not None:
            self._close()
            self._blocks.append(
                ImageBlock(
                    mime_type=inline.mime_type or "application/octet-stream",
                    data=base64.b64encode(inline.data).decode("ascii"),
                )
            )
            return None
        if raw_signature:
            self._close()
            signature = encode_signature(raw_signature)
            self._blocks.append(
                ThinkingBlock.model_validate({"text": "", "signature": signature, "bare": True})
            )
            return ThinkingDelta("", signature)
        return None

    def _add_call(self, call: Any, raw_signature: bytes | None) -> ToolCallReady:
        extra: dict[str, Any] = {}
        if call.id:
            call_id = call.id
            extra["gemini_id"] = call.id
        else:
            call_id = f"call_{self._message_id[:16]}_{self._calls}"
        if raw_signature:
            extra["thought_signature"] = encode_signature(raw_signature)
        args = call.args
        block = ToolCallBlock(
            id=call_id,
            name=call.name or "",
            arguments=dict(args) if isinstance(args, dict) else {},
            **extra,
        )
        self._blocks.append(block)
        self._calls += 1
        return ToolCallReady(block, self._calls - 1)

    def _close(self) -> None:
        kind = self._kind
        if not kind:
            return
        text = "".join(self._texts)
        signature = self._open_signature
        if kind == _THOUGHT:
            self._blocks.append(ThinkingBlock(text=text, signature=signature))
        elif signature is not None:
            self._blocks.append(
                TextBlock.model_validate({"text": text, "thought_signature": signature})
            )
        elif text:
            self._blocks.append(TextBlock(text=text))
        self._kind = 0
        self._texts = []
        self._open_signature = None

    # -- chunk facts ----------------------------------------------------------------------------
    def add_chunk(self, chunk: Any, candidate: Any) -> None:
        """Record usage, finish reason and prompt feedback of one chunk."""
        if chunk.usage_metadata is not None:
            self._usage = chunk.usage_metadata
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self._block_reason = _enum_value(feedback.block_reason)
        if candidate is not None and candidate.finish_reason is not None:
            self._finish_reason = _enum_value(candidate.finish_reason)
            self._finish_message = candidate.finish_message

    # -- the end ----------------------------------------------------------------------------------
    def finish(self, model: str) -> ModelResponse:
        """The assembled response. Raises when the stream ended without a finish reason
        (a cut connection) or with one that means the output must be resampled."""
        self._close()
        extra: dict[str, Any] = {}
        reason = self._finish_reason
        if self._block_reason is not None:
            stop = StopReason.REFUSAL
            extra["block_reason"] = self._block_reason
        elif reason is None:
            raise ProviderConnectionError(
                "The Gemini stream ended before the model finished (no finish reason was sent).",
                provider="google",
            )
        elif reason in _REFUSALS:
            stop = StopReason.REFUSAL
            extra["finish_reason"] = reason
        elif reason in _CUT_OFF:
            stop = StopReason.MAX_TOKENS
        elif reason in _RESAMPLE:
            detail = f": {self._finish_message}" if self._finish_message else "."
            raise ProviderError(
                f"Gemini ended the response with {reason}{detail} Retrying samples it again.",
                provider="google",
                retryable=True,
            )
        elif reason == "MISSING_THOUGHT_SIGNATURE":
            raise InvalidRequestError(
                "Gemini rejected the history: a function call is missing its thought signature. "
                "Replay the conversation to the model that produced it, or start a new session.",
                provider="google",
            )
        elif any(type(b) is ToolCallBlock for b in self._blocks):
            stop = StopReason.TOOL_USE
        else:
            stop = StopReason.END_TURN
        usage = map_usage(self._usage)
        meta = MessageMeta(id=self._message_id, model=self._model, **extra)
        message = Message(role="assistant", content=self._blocks, meta=meta)
        return ModelResponse(message=message, stop_reason=stop, usage=usage, model=model)
