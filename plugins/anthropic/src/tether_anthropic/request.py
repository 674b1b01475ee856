"""Request conversion: a tether :class:`~tether.provider.ModelRequest` → the keyword
arguments of ``messages.create``.

What this module guarantees, for any tether history (including one written by another
provider):

- tool results travel as ``tool_result`` blocks in a ``user`` message, first in that
  message; consecutive user-side messages (a ``tool`` message and the user message with
  images re-homed from it) are merged into one user turn, and so are consecutive
  assistant messages;
- thinking blocks produced by this very model are replayed verbatim (signature, or the
  opaque ``data`` of redacted thinking); any other thinking is downgraded to plain text,
  or dropped when it has no text;
- tool-call ids that the API would reject are rewritten, the same way in the call and
  in its result;
- at most three ``cache_control`` breakpoints (the API allows four): after system and
  tools, after the last message, and after the previous user turn, so the prefix cached
  by the last request is read by this one.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tether.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tether.provider import ModelCapabilities, ModelRequest

from .catalogue import ModelTraits, traits

__all__ = ["build_params", "tool_use_id"]

log = logging.getLogger("tether_anthropic")

_VALID_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_CACHEABLE = frozenset({"text", "image", "tool_use", "tool_result", "document"})
_EFFORT_BUDGETS = {"low": 2_048, "medium": 8_192, "high": 24_576, "xhigh": 32_768, "max": 49_152}
_MIN_BUDGET = 1_024

Json = dict[str, Any]


def tool_use_id(call_id: str) -> str:
    """``call_id`` if the API accepts it as a ``tool_use`` id, else a stable rewrite of it
    (the same input always gives the same output, so calls and results stay paired)."""
    if _VALID_ID.match(call_id):
        return call_id
    digest = hashlib.sha1(call_id.encode("utf-8")).hexdigest()[:12]
    return f"{_INVALID_ID_CHARS.sub('_', call_id)[:40]}_{digest}"


def build_params(request: ModelRequest, origin: str, capabilities: ModelCapabilities) -> Json:
    """The ``messages.create`` arguments for ``request``.

    ``origin`` is ``"<provider>/<model>"``: assistant messages whose ``meta.model``
    equals it have their thinking replayed verbatim. ``capabilities`` are the provider's
    own (catalogue plus configuration) for ``request.model``. Parameters the SDK has no
    keyword for (``temperature``) travel in ``extra_body``.
    """
    model_traits = traits(request.model)
    settings = request.settings
    caching = bool(settings.get("prompt_caching", capabilities.prompt_caching))
    cache_control: Json | None = None
    if caching:
        cache_control = {"type": "ephemeral"}
        ttl = settings.get("cache_ttl")
        if ttl:
            cache_control["ttl"] = str(ttl)

    system_texts = [request.system] if request.system else []
    messages = _convert_messages(request.messages, origin, system_texts)
    tools = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in request.tools
    ]
    system: list[Json] = [{"type": "text", "text": text} for text in system_texts if text]

    if cache_control is not None:
        if system:
            system[-1]["cache_control"] = cache_control
        elif tools:
            tools[-1]["cache_control"] = cache_control
        _mark_message_breakpoints(messages, cache_control)

    max_tokens = request.max_output_tokens or capabilities.max_output_tokens
    params: Json = {"model": request.model, "messages": messages, "max_tokens": max_tokens}
    if system:
        params["system"] = system
    if tools:
        params["tools"] = tools
    if request.stop_sequences:
        params["stop_sequences"] = list(request.stop_sequences)

    thinking, output_config = _thinking(request, model_traits, settings)
    if thinking is not None and not _tool_loop_can_think(messages):
        log.info(
            "Thinking is off for this request: the assistant turn being continued has no "
            "thinking block from %s (it came from another model), which the API requires.",
            request.model,
        )
        thinking = None
    if thinking is not None:
        params["thinking"] = thinking
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and budget >= max_tokens:
            params["max_tokens"] = budget + max(max_tokens, _MIN_BUDGET)
    if request.output_schema is not None:
        output_config = dict(output_config or {})
        output_config["format"] = {
            "type": "json_schema",
            "schema": dict(request.output_schema.schema),
        }
    if output_config:
        params["output_config"] = output_config
    if request.temperature is not None:
        if thinking is not None:
            log.info("temperature is not sent: the API accepts none while thinking is on.")
        elif not model_traits.sampling:
            log.warning(
                "temperature=%s is not sent: %s accepts only its default sampling.",
                request.temperature,
                request.model,
            )
        else:
            params["extra_body"] = {"temperature": request.temperature}
    return params


# -- thinking -----------------------------------------------------------------------------
def _thinking(
    request: ModelRequest, model_traits: ModelTraits, settings: Mapping[str, Any]
) -> tuple[Json | None, Json]:
    config = request.thinking
    if config is None:
        return None, {}
    if model_traits.thinking == "extended":
        budget = config.budget_tokens or _EFFORT_BUDGETS.get(config.effort or "medium", 8_192)
        return {"type": "enabled", "budget_tokens": max(budget, _MIN_BUDGET)}, {}
    effort = config.effort or _effort_for_budget(config.budget_tokens)
    # Newer models omit the thinking text unless asked; ThinkingConfig means "show it".
    thinking: Json = {
        "type": "adaptive",
        "display": str(settings.get("thinking_display", "summarized")),
    }
    return thinking, ({"effort": effort} if effort else {})


def _effort_for_budget(budget: int | None) -> str | None:
    if budget is None:
        return None
    for effort, limit in _EFFORT_BUDGETS.items():
        if budget <= limit:
            return effort
    return "max"


def _tool_loop_can_think(messages: Sequence[Json]) -> bool:
    """False when the request continues a tool-use turn whose assistant message does not
    start with a thinking block: with thinking on, the API rejects such a request."""
    if len(messages) < 2 or messages[-1]["role"] != "user":
        return True
    if not any(b.get("type") == "tool_result" for b in messages[-1]["content"]):
        return True
    assistant = messages[-2]
    if assistant["role"] != "assistant" or not assistant["content"]:
        return True
    return bool(assistant["content"][0].get("type") in ("thinking", "redacted_thinking"))


# -- messages -----------------------------------------------------------------------------
def _convert_messages(
    messages: Sequence[Message], origin: str, system_texts: list[str]
) -> list[Json]:
    turns: list[Json] = []
    for message in messages:
        if message.role == "system":
            system_texts.append(message.text)
            continue
        if message.role == "assistant":
            role = "assistant"
            content = _assistant_blocks(message, replay=message.meta.model == origin)
        else:
            role = "user"
            content = _user_blocks(message)
        if not content:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(content)
        else:
            turns.append({"role": role, "content": content})
    for turn in turns:
        if turn["role"] == "user":
            # tool_result blocks must open the user turn that answers the tool calls
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    return turns


def _assistant_blocks(message: Message, *, replay: bool) -> list[Json]:
    blocks: list[Json] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tool_use_id(block.id),
                    "name": block.name,
                    "input": dict(block.arguments),
                }
            )
        elif isinstance(block, ThinkingBlock):
            converted = _thinking_block(block, replay=replay)
            if converted is not None:
                blocks.append(converted)
        elif isinstance(block, ImageBlock):
            blocks.append(_image(block))
    return blocks


def _thinking_block(block: ThinkingBlock, *, replay: bool) -> Json | None:
    data = getattr(block, "data", None)
    if replay and block.redacted and isinstance(data, str) and data:
        return {"type": "redacted_thinking", "data": data}
    if replay and not block.redacted and block.signature:
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if block.redacted or not block.text.strip():
        return None
    # Another model's reasoning: kept as marked text, as the other providers do.
    return {"type": "text", "text": f"<thinking>\n{block.text}\n</thinking>"}


def _user_blocks(message: Message) -> list[Json]:
    blocks: list[Json] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            blocks.append(_image(block))
        elif isinstance(block, ToolResultBlock):
            blocks.append(_tool_result(block))
        elif isinstance(block, ToolCallBlock | ThinkingBlock):
            log.warning("Dropped a %s block found in a %s message.", block.type, message.role)
    return blocks


def _tool_result(block: ToolResultBlock) -> Json:
    result: Json = {"type": "tool_result", "tool_use_id": tool_use_id(block.call_id)}
    if isinstance(block.content, str):
        if block.content:
            result["content"] = block.content
    else:
        parts: list[Json] = []
        for part in block.content:
            if isinstance(part, ImageBlock):
                parts.append(_image(part))
            elif part.text:
                parts.append({"type": "text", "text": part.text})
        if parts:
            result["content"] = parts
    if block.is_error:
        result["is_error"] = True
    return result


def _image(block: ImageBlock) -> Json:
    if block.data is not None:
        source: Json = {"type": "base64", "media_type": block.mime_type, "data": block.data}
    else:
        source = {"type": "url", "url": block.url or ""}
    return {"type": "image", "source": source}


# -- prompt caching -----------------------------------------------------------------------
def _mark_message_breakpoints(messages: list[Json], cache_control: Mapping[str, Any]) -> None:
    if not messages:
        return
    targets = [len(messages) - 1]
    user_turns = [i for i, m in enumerate(messages[:-1]) if m["role"] == "user"]
    if user_turns:
        targets.append(user_turns[-1])
    for index in targets:
        for block in reversed(messages[index]["content"]):
            if block.get("type") in _CACHEABLE:
                block["cache_control"] = dict(cache_control)
                break
