"""Request conversion: a tether :class:`~tether.provider.ModelRequest` → Gemini contents and config.

Roles: ``user`` → ``user``; ``assistant`` → ``model``; a ``tool`` message → one ``user``
content of ``functionResponse`` parts in call order, each naming its function (Gemini
matches responses to calls by name and position) and carrying the call's ``id`` only
when Gemini itself issued one. The system prompt is ``systemInstruction``.

Replaying model turns (the history may come from any provider):

- Turns produced by this very model (``meta.model == "google/<model>"``) are replayed
  part for part, every ``thoughtSignature`` on the part it came with.
- Turns from any other model lose their signatures: thinking becomes plain text wrapped
  in ``<thinking>`` tags (dropped when empty or redacted). Models that insist on a
  signature for each step of function calling (Gemini 3) get Google's documented
  placeholder on the first function call of such a turn instead.
- Images in tool results go inside ``functionResponse.parts`` for models that accept
  them (``images_in_tool_results``), otherwise into a ``user`` content right after the
  responses, with a note left in the result.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from google.genai import types

from tether.errors import ConfigError
from tether.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    rehome_images,
)
from tether.provider import ModelRequest, ThinkingConfig

__all__ = ["PASSTHROUGH_SETTINGS", "build_config", "build_contents", "requires_signatures"]

SKIP_SIGNATURE = base64.urlsafe_b64decode("skip_thought_signature_validator")
"""Google's documented placeholder for function calls that no Gemini model signed."""

_STRICT_SIGNATURE_PREFIXES = ("gemini-3",)

PASSTHROUGH_SETTINGS = frozenset(
    {"safety_settings", "top_p", "top_k", "seed", "cached_content", "response_mime_type"}
)
"""Keys of ``[providers.google]`` passed to ``GenerateContentConfig`` as they are."""


def requires_signatures(model: str) -> bool:
    """Whether ``model`` rejects a function-calling step whose first call has no signature."""
    return model.startswith(_STRICT_SIGNATURE_PREFIXES)


def _decode(signature: str | None) -> bytes | None:
    if not signature:
        return None
    try:
        return base64.b64decode(
            signature, altchars=b"-_" if ("-" in signature or "_" in signature) else None
        )
    except (binascii.Error, ValueError):
        return None


# -- contents -----------------------------------------------------------------------------------
def build_contents(
    request: ModelRequest, provider: str = "google"
) -> tuple[list[types.Content], str]:
    """The ``contents`` of the request, and system text found in ``system`` messages
    (which should not occur in ``request.messages``; kept rather than lost)."""
    own_model = f"{provider}/{request.model}"
    strict = requires_signatures(request.model)
    inline_tool_images = request.capabilities.images_in_tool_results
    calls: dict[str, ToolCallBlock] = {}
    contents: list[types.Content] = []
    system_parts: list[str] = []
    for message in request.messages:
        role = message.role
        if role == "assistant":
            same = message.meta.model == own_model
            parts = _model_parts(message, same_model=same, strict=strict and not same)
            for call in message.tool_calls:
                calls[call.id] = call
            if parts:
                contents.append(types.Content(role="model", parts=parts))
        elif role == "tool":
            contents.extend(_tool_contents(message.tool_results, calls, inline_tool_images))
        elif role == "system":
            system_parts.append(message.text)
        else:
            parts = _user_parts(message)
            if parts:
                contents.append(types.Content(role="user", parts=parts))
    return contents, "\n\n".join(p for p in system_parts if p)


def _user_parts(message: Message) -> list[types.Part]:
    parts: list[types.Part] = []
    results: list[ToolResultBlock] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                parts.append(types.Part(text=block.text))
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
        elif isinstance(block, ToolResultBlock):
            results.append(block)
    for result in results:
        parts.append(types.Part(text=f"[Result of tool call {result.call_id}]\n{result.text}"))
    return parts


def _image_part(block: ImageBlock) -> types.Part:
    if block.data is not None:
        return types.Part(
            inline_data=types.Blob(
                mime_type=block.mime_type, data=base64.b64decode(block.data, validate=True)
            )
        )
    return types.Part(file_data=types.FileData(file_uri=block.url, mime_type=block.mime_type))


def _model_parts(message: Message, *, same_model: bool, strict: bool) -> list[types.Part]:
    parts: list[types.Part] = []
    placeholder_due = strict
    for block in message.content:
        if isinstance(block, TextBlock):
            signature = _decode(getattr(block, "thought_signature", None)) if same_model else None
            if block.text or signature:
                parts.append(types.Part(text=block.text, thought_signature=signature))
        elif isinstance(block, ToolCallBlock):
            signature = _decode(getattr(block, "thought_signature", None)) if same_model else None
            if signature is None and placeholder_due:
                signature = SKIP_SIGNATURE
            placeholder_due = False
            gemini_id = getattr(block, "gemini_id", None)
            call = types.FunctionCall(name=block.name, args=dict(block.arguments), id=gemini_id)
            parts.append(types.Part(function_call=call, thought_signature=signature))
        elif isinstance(block, ThinkingBlock):
            parts.extend(_thinking_parts(block, same_model))
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
    return parts


def _thinking_parts(block: ThinkingBlock, same_model: bool) -> list[types.Part]:
    if same_model and not block.redacted:
        signature = _decode(block.signature)
        if getattr(block, "bare", False):
            return [types.Part(thought_signature=signature)] if signature else []
        if block.text or signature:
            return [types.Part(text=block.text, thought=True, thought_signature=signature)]
        return []
    if block.redacted or not block.text.strip():
        return []
    return [types.Part(text=f"<thinking>\n{block.text}\n</thinking>")]


def _tool_contents(
    results: Sequence[ToolResultBlock], calls: Mapping[str, ToolCallBlock], inline_images: bool
) -> list[types.Content]:
    followup: Message | None = None
    if not inline_images:
        moved, followup = rehome_images(results)
        results = moved
    parts = [
        types.Part(function_response=_function_response(r, calls.get(r.call_id))) for r in results
    ]
    contents = [types.Content(role="user", parts=parts)] if parts else []
    if followup is not None:
        contents.append(types.Content(role="user", parts=_user_parts(followup)))
    return contents


def _function_response(
    result: ToolResultBlock, call: ToolCallBlock | None
) -> types.FunctionResponse:
    key = "error" if result.is_error else "output"
    media: list[types.FunctionResponsePart] = []
    if not isinstance(result.content, str):
        for block in result.content:
            if isinstance(block, ImageBlock):
                media.append(_function_response_media(block))
    return types.FunctionResponse(
        name=call.name if call is not None else result.call_id,
        id=getattr(call, "gemini_id", None) if call is not None else None,
        response={key: result.text},
        parts=media or None,
    )


def _function_response_media(block: ImageBlock) -> types.FunctionResponsePart:
    if block.data is not None:
        blob = types.FunctionResponseBlob(
            mime_type=block.mime_type, data=base64.b64decode(block.data, validate=True)
        )
        return types.FunctionResponsePart(inline_data=blob)
    data = types.FunctionResponseFileData(file_uri=block.url, mime_type=block.mime_type)
    return types.FunctionResponsePart(file_data=data)


# -- config -------------------------------------------------------------------------------------
def build_config(request: ModelRequest, extra_system: str = "") -> types.GenerateContentConfig:
    """``GenerateContentConfig``: system instruction, tools, limits, thinking, and the
    documented passthrough settings of ``[providers.google]``."""
    system = "\n\n".join(p for p in (request.system, extra_system) if p)
    config: dict[str, Any] = {
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
    }
    if system:
        config["system_instruction"] = system
    if request.tools:
        declarations = [
            types.FunctionDeclaration(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=dict(tool.parameters),
            )
            for tool in request.tools
        ]
        config["tools"] = [types.Tool(function_declarations=declarations)]
    if request.max_output_tokens is not None:
        config["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop_sequences:
        config["stop_sequences"] = list(request.stop_sequences)
    if request.thinking is not None and request.capabilities.thinking:
        config["thinking_config"] = _thinking_config(request.thinking)
    if request.output_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = dict(request.output_schema.schema)
    unknown = sorted(set(request.settings) - PASSTHROUGH_SETTINGS)
    if unknown:
        raise ConfigError(
            f"[providers.google] has unknown setting(s) {', '.join(unknown)}. Valid: "
            f"{', '.join(sorted(PASSTHROUGH_SETTINGS))} (and api_key_env, base_url, timeout, models)."
        )
    for key in PASSTHROUGH_SETTINGS & set(request.settings):
        config[key] = request.settings[key]
    return types.GenerateContentConfig(**config)


_LEVELS = ("minimal", "low", "medium", "high")


def _thinking_config(thinking: ThinkingConfig) -> types.ThinkingConfig:
    """Thought summaries on, with an effort level (Gemini 3) or a token budget (Gemini 2.5);
    the API takes one or the other, so an effort wins over a budget."""
    effort = (thinking.effort or "").lower()
    if effort:
        if effort not in _LEVELS:
            raise ConfigError(
                f'Gemini has no thinking effort "{thinking.effort}". Use one of: {", ".join(_LEVELS)}.'
            )
        return types.ThinkingConfig(
            include_thoughts=True, thinking_level=types.ThinkingLevel(effort.upper())
        )
    return types.ThinkingConfig(include_thoughts=True, thinking_budget=thinking.budget_tokens)
