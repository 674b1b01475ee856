"""Stream assembly: the SDK's raw Messages API events → tether deltas and one response.

Each ``text_delta`` / ``thinking_delta`` is yielded the moment it arrives; tool-call
arguments are collected from ``input_json_delta`` fragments and decoded once, at
``content_block_stop``, where the call is announced complete (``ToolCallReady``). The stream must end with ``message_stop``: a stream that stops
before it (a proxy cut the connection cleanly) is a dropped connection, not a response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tether.arguments import split_tool_arguments
from tether.errors import ProviderConnectionError
from tether.events import TextDelta, ThinkingDelta
from tether.messages import (
    Block,
    Message,
    MessageMeta,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)
from tether.provider import ModelResponse, ProviderEvent, ToolCallReady

__all__ = ["STOP_REASONS", "assemble"]

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
    # The turn was paused (long server-side work); what arrived is a complete message.
    "pause_turn": StopReason.END_TURN,
    # Generation ran into the context window: the answer is cut off like at max_tokens.
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
}


class _Block:
    __slots__ = ("data", "id", "kind", "name", "parts", "signature")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.parts: list[str] = []
        self.id = ""
        self.name = ""
        self.signature: str | None = None
        self.data: str | None = None


async def assemble(events: AsyncIterator[Any], origin: str) -> AsyncIterator[ProviderEvent]:
    """Translate raw stream events; ``origin`` (``"anthropic/<model>"``) is recorded as
    the producing model of the assembled message."""
    blocks: dict[int, _Block] = {}
    finished: list[tuple[int, Block]] = []
    stop_reason = "end_turn"
    usage: dict[str, int] = {}
    reasoning = 0
    calls = 0
    stopped = False
    async for event in events:
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            delta_kind = delta.type
            if delta_kind == "text_delta":
                text = delta.text
                blocks[event.index].parts.append(text)
                yield TextDelta(text)
            elif delta_kind == "input_json_delta":
                blocks[event.index].parts.append(delta.partial_json)
            elif delta_kind == "thinking_delta":
                text = delta.thinking
                blocks[event.index].parts.append(text)
                yield ThinkingDelta(text)
            elif delta_kind == "signature_delta":
                blocks[event.index].signature = delta.signature
                yield ThinkingDelta("", delta.signature)
        elif kind == "content_block_start":
            raw = event.content_block
            block = _Block(raw.type)
            if block.kind == "tool_use":
                block.id, block.name = raw.id, raw.name
            elif block.kind == "thinking":
                block.signature = getattr(raw, "signature", None) or None
                if getattr(raw, "thinking", None):
                    block.parts.append(raw.thinking)
            elif block.kind == "redacted_thinking":
                block.data = raw.data
            elif block.kind == "text" and raw.text:
                block.parts.append(raw.text)
                yield TextDelta(raw.text)
            blocks[event.index] = block
        elif kind == "content_block_stop":
            done = _finish(blocks.pop(event.index))
            if done is not None:
                finished.append((event.index, done))
                if type(done) is ToolCallBlock:
                    yield ToolCallReady(done, calls)
                    calls += 1
        elif kind == "message_start":
            _merge_usage(usage, event.message.usage)
        elif kind == "message_delta":
            if event.delta.stop_reason is not None:
                stop_reason = event.delta.stop_reason
            _merge_usage(usage, event.usage)
            details = getattr(event.usage, "output_tokens_details", None)
            if details is not None:
                reasoning = details.thinking_tokens
        elif kind == "message_stop":
            stopped = True
            break
    if not stopped:
        raise ProviderConnectionError(
            "The Anthropic stream ended before its message_stop event; the response is incomplete.",
            provider="anthropic",
        )
    for index, block in sorted(blocks.items()):
        done = _finish(block)
        if done is not None:
            finished.append((index, done))
    finished.sort(key=lambda item: item[0])
    total = _usage(usage, reasoning)
    reason = STOP_REASONS.get(stop_reason, StopReason.END_TURN)
    meta_fields: dict[str, Any] = {"model": origin, "usage": total, "stop_reason": reason}
    if stop_reason != reason.value:
        meta_fields["provider_stop_reason"] = stop_reason
    meta = MessageMeta.model_validate(meta_fields)
    message = Message(role="assistant", content=[b for _, b in finished], meta=meta)
    yield ModelResponse(message=message, stop_reason=reason, usage=total, model=origin)


def _finish(block: _Block) -> Block | None:
    kind = block.kind
    if kind == "text":
        text = "".join(block.parts)
        return TextBlock(text=text) if text else None
    if kind == "tool_use":
        return _tool_call(block)
    if kind == "thinking":
        return ThinkingBlock(text="".join(block.parts), signature=block.signature)
    if kind == "redacted_thinking":
        return ThinkingBlock(text="", redacted=True, data=block.data)
    return None


def _tool_call(block: _Block) -> ToolCallBlock:
    arguments, raw = split_tool_arguments("".join(block.parts))
    return ToolCallBlock(id=block.id, name=block.name, arguments=arguments, raw_arguments=raw)


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _merge_usage(into: dict[str, int], usage: Any) -> None:
    """``message_delta`` usage is cumulative: later non-null counts replace earlier ones."""
    if usage is None:
        return
    for name in _USAGE_FIELDS:
        value = getattr(usage, name, None)
        if value is not None:
            into[name] = value


def _usage(raw: dict[str, int], reasoning: int) -> Usage:
    """Anthropic's ``input_tokens`` excludes cached tokens; tether's includes them."""
    fresh = raw.get("input_tokens", 0)
    written = raw.get("cache_creation_input_tokens", 0)
    read = raw.get("cache_read_input_tokens", 0)
    return Usage(
        input_tokens=fresh + written + read,
        output_tokens=raw.get("output_tokens", 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
    )
