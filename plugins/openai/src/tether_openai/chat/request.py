"""Building a Chat Completions request from a :class:`~tether.provider.ModelRequest`.

Chat Completions takes tool results as ``role: "tool"`` messages, one per result, right
after the assistant message that made the calls, and those messages are text-only: images
in tool results are moved into one user message after them. The API has no way to replay
reasoning, so thinking blocks are dropped for the model that wrote them and shown as text
to any other model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    rehome_images,
)
from tether.provider import ModelRequest, ToolDefinition

from ..history import (
    arguments_text,
    cache_key,
    downgraded_thinking,
    image_url,
    produced_by,
    result_text,
    wire_call_id,
)

__all__ = ["chat_messages", "chat_params", "effort"]


def chat_params(
    request: ModelRequest,
    *,
    model_string: str,
    openai_features: bool,
    content_with_calls: str | None = None,
    tool_choice: str | None = None,
    stream: bool = True,
) -> dict[str, Any]:
    """Keyword arguments for ``client.chat.completions.create``.

    ``content_with_calls`` is the ``content`` of an assistant message that has only tool
    calls (``None`` sends ``null``); ``tool_choice`` is sent with the tools when given;
    ``stream=False`` asks for one JSON answer (servers that do not stream such turns)."""
    caps = request.capabilities
    params: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(
            request.messages, request.system, model_string, content_with_calls
        ),
    }
    if stream:
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
    if request.tools:
        params["tools"] = [_tool(t) for t in request.tools]
        if tool_choice is not None:
            params["tool_choice"] = _tool_choice(tool_choice)
    if request.max_output_tokens is not None:
        key = "max_completion_tokens" if openai_features else "max_tokens"
        params[key] = request.max_output_tokens
    if request.temperature is not None and not caps.thinking:
        params["temperature"] = request.temperature
    if request.stop_sequences and not caps.thinking:
        params["stop"] = list(request.stop_sequences)
    if request.output_schema is not None:
        schema = request.output_schema
        json_schema: dict[str, Any] = {
            "name": schema.name,
            "schema": dict(schema.schema),
            "strict": schema.strict,
        }
        if schema.description:
            json_schema["description"] = schema.description
        params["response_format"] = {"type": "json_schema", "json_schema": json_schema}
    if openai_features:
        if request.session_id:
            params["prompt_cache_key"] = cache_key(request.session_id)
        if request.thinking is not None and caps.thinking:
            params["reasoning_effort"] = effort(
                request.thinking.effort, request.thinking.budget_tokens
            )
    return params


def effort(level: str | None, budget_tokens: int | None) -> str:
    """An OpenAI reasoning effort from tether's thinking settings."""
    if level:
        return level
    if budget_tokens is None:
        return "medium"
    if budget_tokens < 4_096:
        return "low"
    return "medium" if budget_tokens < 16_384 else "high"


def _tool_choice(choice: str) -> str | dict[str, Any]:
    """``auto``/``required``/``none`` as they are; any other value names the one tool."""
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        },
    }


def chat_messages(
    messages: Sequence[Message],
    system: str,
    model_string: str,
    content_with_calls: str | None = None,
) -> list[dict[str, Any]]:
    """The ``messages`` array: the system prompt first, then the history."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "assistant":
            converted = _assistant(message, model_string, content_with_calls)
            if converted is not None:
                out.append(converted)
        elif message.role == "tool":
            out.extend(_tool_results(message.tool_results))
        elif message.role == "system":
            out.append({"role": "system", "content": message.text})
        else:
            out.append({"role": "user", "content": _user_content(message)})
    return out


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    if all(isinstance(b, TextBlock) for b in message.content):
        return message.text
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": image_url(block)}})
    return parts


def _assistant(
    message: Message, model_string: str, content_with_calls: str | None
) -> dict[str, Any] | None:
    own = produced_by(message, model_string)
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ThinkingBlock) and not own:
            shown = downgraded_thinking(block)
            if shown is not None:
                texts.append(shown)
        elif isinstance(block, ToolCallBlock):
            calls.append(
                {
                    "id": wire_call_id(block.id),
                    "type": "function",
                    "function": {"name": block.name, "arguments": arguments_text(block)},
                }
            )
    text = "\n\n".join(t for t in texts if t)
    if not text and not calls:
        return None
    content = text or (content_with_calls if calls else None)
    converted: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        converted["tool_calls"] = calls
    return converted


def _tool_results(results: Sequence[ToolResultBlock]) -> list[dict[str, Any]]:
    moved, images = rehome_images(results)
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": wire_call_id(r.call_id), "content": result_text(r)}
        for r in moved
    ]
    if images is not None:
        out.append({"role": "user", "content": _user_content(images)})
    return out
