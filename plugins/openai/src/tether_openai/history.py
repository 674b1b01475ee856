"""Rules shared by both wire formats for sending any tether history, including one
produced by another provider.

- Thinking is replayed natively only to the model that produced it (``meta.model``);
  for any other model it becomes plain text, or is dropped when empty or redacted.
- Tool-call ids that OpenAI would reject (too long, unusual characters) are mapped to a
  stable hash, the same for the call and its result.
- Images are sent as URLs (``data:`` URLs for inline images).
"""

from __future__ import annotations

import hashlib
import json
import re

from tether.arguments import split_tool_arguments
from tether.messages import (
    Block,
    ImageBlock,
    Message,
    MessageMeta,
    StopReason,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)
from tether.provider import ModelResponse

__all__ = [
    "arguments_text",
    "assistant_response",
    "cache_key",
    "downgraded_thinking",
    "image_url",
    "parse_arguments",
    "produced_by",
    "result_text",
    "wire_call_id",
]

_SAFE_ID = re.compile(r"[A-Za-z0-9_\-]{1,40}")


def produced_by(message: Message, model_string: str) -> bool:
    """Whether ``message`` was produced by ``model_string`` (``provider/model``)."""
    return message.meta.model == model_string


def downgraded_thinking(block: ThinkingBlock) -> str | None:
    """The text another model may see of a foreign thinking block, or None to drop it."""
    if block.redacted or not block.text.strip():
        return None
    return f"<thinking>\n{block.text}\n</thinking>"


def wire_call_id(call_id: str) -> str:
    """``call_id`` if OpenAI accepts it as is, else a stable ``call_<hash>`` stand-in."""
    if _SAFE_ID.fullmatch(call_id):
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:32]


def cache_key(session_id: str) -> str:
    """A ``prompt_cache_key`` for a session: stable, opaque, well under the 64-char limit."""
    return "tether-" + hashlib.sha256(session_id.encode()).hexdigest()[:40]


def image_url(block: ImageBlock) -> str:
    if block.data is not None:
        return f"data:{block.mime_type};base64,{block.data}"
    if block.url is not None:
        return block.url
    raise ValueError("An image block has neither `data` nor `url`; it cannot be sent.")


def arguments_text(call: ToolCallBlock) -> str:
    """The arguments as the model wrote them (its raw text if it was not a JSON object)."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def parse_arguments(text: str) -> tuple[dict[str, object], str | None]:
    """``(arguments, raw_arguments)`` for streamed argument text; see ``ToolCallBlock``.

    Parsed strictly (:func:`tether.arguments.split_tool_arguments`): duplicate keys,
    over-deep or over-long text come back raw, for the executor to refuse precisely."""
    return split_tool_arguments(text)


def result_text(result: ToolResultBlock) -> str:
    """A result's text; errors are marked so the model cannot mistake them for output
    (neither OpenAI API has an error flag on tool results)."""
    text = result.text
    if result.is_error and not text.lower().startswith("error"):
        return f"Error: {text}"
    return text


def assistant_response(
    blocks: list[Block], stop: StopReason, usage: Usage, model: str
) -> ModelResponse:
    """The ``ModelResponse`` ending a stream of either wire format: the assembled
    assistant message, its stop reason and usage recorded in its meta."""
    message = Message(
        role="assistant",
        content=blocks,
        meta=MessageMeta(model=model, usage=usage, stop_reason=stop),
    )
    return ModelResponse(message=message, stop_reason=stop, usage=usage, model=model)
