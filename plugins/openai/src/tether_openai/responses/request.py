"""Building a Responses API request from a :class:`~tether.provider.ModelRequest`.

Requests are stateless (``store=false``): the whole history goes in ``input`` every time,
and reasoning items travel with their ``encrypted_content`` (requested through
``include=["reasoning.encrypted_content"]``). A reasoning item is replayed only to the
model that produced it and only together with the item that followed it in that response
(the API rejects a reasoning item without it); otherwise the reasoning is dropped, or
shown as text to a different model. Item ids (``rs_``, ``msg_``, ``fc_``) are sent only
inside such a replayed group, because the API ties them to each other.

Tool results become ``function_call_output`` items, which take text and images, so images
stay where the tool put them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.messages import (
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tether.provider import ModelRequest, OutputSchema, ToolDefinition

from ..chat.request import effort
from ..history import (
    arguments_text,
    cache_key,
    downgraded_thinking,
    image_url,
    produced_by,
    result_text,
    wire_call_id,
)

__all__ = ["responses_input", "responses_params"]


def responses_params(
    request: ModelRequest,
    *,
    model_string: str,
    reasoning_summary: str | None = "auto",
    openai_features: bool = True,
) -> dict[str, Any]:
    """Keyword arguments for ``client.responses.create`` (streaming, stateless).

    ``openai_features=False`` (a compatible server) leaves out ``prompt_cache_key``."""
    caps = request.capabilities
    params: dict[str, Any] = {
        "model": request.model,
        "input": responses_input(request.messages, model_string),
        "stream": True,
        "store": False,
    }
    if request.system:
        params["instructions"] = request.system
    if request.tools:
        params["tools"] = [_tool(t) for t in request.tools]
    if request.max_output_tokens is not None:
        params["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None and not caps.thinking:
        params["temperature"] = request.temperature
    if request.session_id and openai_features:
        params["prompt_cache_key"] = cache_key(request.session_id)
    if caps.thinking:
        params["include"] = ["reasoning.encrypted_content"]
        reasoning: dict[str, Any] = {}
        if request.thinking is not None:
            reasoning["effort"] = effort(request.thinking.effort, request.thinking.budget_tokens)
            if reasoning_summary:
                reasoning["summary"] = reasoning_summary
        if reasoning:
            params["reasoning"] = reasoning
    if request.output_schema is not None:
        params["text"] = {"format": json_schema_format(request.output_schema)}
    return params


def json_schema_format(output: OutputSchema) -> dict[str, Any]:
    """The ``text.format`` of a structured-output request."""
    form: dict[str, Any] = {
        "type": "json_schema",
        "name": output.name,
        "schema": dict(output.schema),
        "strict": output.strict,
    }
    if output.description:
        form["description"] = output.description
    return form


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
        "strict": False,
    }


def responses_input(messages: Sequence[Message], model_string: str) -> list[dict[str, Any]]:
    """The ``input`` items for the history."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            items.extend(_assistant(message, model_string))
        elif message.role == "tool":
            items.extend(_result(r) for r in message.tool_results)
        else:
            role = "system" if message.role == "system" else "user"
            content = _input_content(message.content)
            if content:
                items.append({"role": role, "content": content})
    return items


def _input_content(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append({"type": "input_image", "image_url": image_url(block), "detail": "auto"})
    return parts


def _result(result: ToolResultBlock) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    if isinstance(result.content, list) and any(isinstance(b, ImageBlock) for b in result.content):
        output = _input_content(result.content)
        if result.is_error:
            output.insert(0, {"type": "input_text", "text": "Error:"})
    else:
        output = result_text(result)
    return {
        "type": "function_call_output",
        "call_id": wire_call_id(result.call_id),
        "output": output,
    }


def _assistant(message: Message, model_string: str) -> list[dict[str, Any]]:
    own = produced_by(message, model_string)
    blocks = message.content
    items: list[dict[str, Any]] = []
    in_group = False  # the previous item sent was a replayed reasoning item's group
    for index, block in enumerate(blocks):
        if isinstance(block, ThinkingBlock):
            if own:
                in_group = _replayable(block) and _followed(blocks, index)
                if in_group:
                    items.append(_reasoning_item(block))
                continue
            shown = downgraded_thinking(block)
            if shown is not None:
                items.append({"role": "assistant", "content": shown})
            in_group = False
        elif isinstance(block, TextBlock):
            if not block.text:
                continue
            item_id = getattr(block, "item_id", None)
            if in_group and isinstance(item_id, str):
                item: dict[str, Any] = {
                    "type": "message",
                    "id": item_id,
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                }
                phase = getattr(block, "phase", None)
                if isinstance(phase, str):
                    item["phase"] = phase
                items.append(item)
            else:
                items.append({"role": "assistant", "content": block.text})
        elif isinstance(block, ToolCallBlock):
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": wire_call_id(block.id),
                "name": block.name,
                "arguments": arguments_text(block),
            }
            item_id = getattr(block, "item_id", None)
            if in_group and isinstance(item_id, str):
                call["id"] = item_id
            items.append(call)
    return items


def _replayable(block: ThinkingBlock) -> bool:
    return bool(block.signature) and isinstance(getattr(block, "item_id", None), str)


def _followed(blocks: Sequence[Block], index: int) -> bool:
    """Whether the reasoning at ``index`` is followed by the item it belongs with."""
    for block in blocks[index + 1 :]:
        if isinstance(block, ToolCallBlock) or (isinstance(block, TextBlock) and block.text):
            return True
        if isinstance(block, ThinkingBlock):
            return False
    return False


def _reasoning_item(block: ThinkingBlock) -> dict[str, Any]:
    summary = getattr(block, "summary", None)
    if not isinstance(summary, list):
        summary = [block.text] if block.text else []
    return {
        "type": "reasoning",
        "id": getattr(block, "item_id"),  # noqa: B009 - an extra field of the block
        "summary": [{"type": "summary_text", "text": str(s)} for s in summary],
        "encrypted_content": block.signature,
    }
