"""Assembling a streamed Chat Completions response into tether events and one message.

Deltas are handed on the moment a chunk arrives. Tool calls arrive as fragments keyed by
``index`` (the first fragment of each carries its id and name); a call is complete, its
argument text joined, decoded and announced (``ToolCallReady``), when the first fragment
of the next call arrives or the choice's ``finish_reason`` does. Reasoning text that OpenAI-compatible servers
stream (``reasoning_content`` from vLLM/DeepSeek-style servers, ``reasoning`` from
Ollama and OpenRouter) becomes thinking.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
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
from tether.provider import ModelRequest, ModelResponse, ProviderEvent, ToolCallReady

from ..history import assistant_response, parse_arguments

__all__ = ["ChatAssembler", "chat_usage", "completion_chunks"]

_FINISH = {
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.REFUSAL,
}
_NONE: tuple[ProviderEvent, ...] = ()


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)
    block: ToolCallBlock | None = None
    """The finished call, once it was announced."""

    def finished(self) -> ToolCallBlock:
        if self.block is None:
            arguments, invalid = parse_arguments("".join(self.arguments))
            self.block = ToolCallBlock(
                id=self.id, name=self.name, arguments=arguments, raw_arguments=invalid
            )
        return self.block


class ChatAssembler:
    """Feed it each ``ChatCompletionChunk``; :meth:`finish` gives the ``ModelResponse``."""

    __slots__ = (
        "_announced",
        "_calls",
        "_finish",
        "_label",
        "_model_string",
        "_refusal",
        "_request",
        "_text",
        "_thinking",
        "_usage",
    )

    def __init__(self, model_string: str, label: str, request: ModelRequest | None = None) -> None:
        self._request = request
        self._model_string = model_string
        self._label = label
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._announced = 0
        self._finish: str | None = None
        self._usage: Any = None

    def feed(self, chunk: Any) -> tuple[ProviderEvent, ...]:
        """The events carried by one chunk (usually one text delta, often none)."""
        if chunk.usage is not None:
            self._usage = chunk.usage
        choices = chunk.choices
        if not choices:
            return _NONE
        choice = choices[0]
        finish = choice.finish_reason
        delta = choice.delta
        content = delta.content
        if content and finish is None and delta.tool_calls is None and not delta.model_extra:
            self._text.append(content)
            return (TextDelta(content),)
        events = self._slow(delta)
        if finish is not None:
            self._finish = finish
            if len(self._calls) > self._announced:
                events.extend(self._announce(len(self._calls), final=True))
        return tuple(events)

    def _slow(self, delta: Any) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        extra = delta.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._thinking.append(reasoning)
            events.append(ThinkingDelta(reasoning))
        if delta.content:
            self._text.append(delta.content)
            events.append(TextDelta(delta.content))
        if delta.refusal:
            self._refusal.append(delta.refusal)
            events.append(TextDelta(delta.refusal))
        for fragment in delta.tool_calls or ():
            if self._add_fragment(fragment):
                events.extend(self._announce(len(self._calls) - 1, final=False))
        return events

    def _announce(self, upto: int, *, final: bool) -> list[ProviderEvent]:
        """Announce, in index order, the calls before the ``upto``-th not yet announced.
        Before the finish, a call whose argument text is not yet a whole JSON object
        (a server that interleaves calls) waits, and so do the calls after it."""
        ready: list[ProviderEvent] = []
        for key in sorted(self._calls)[self._announced : upto]:
            call = self._calls[key]
            block = call.finished()
            if not final and (block.raw_arguments is not None or not "".join(call.arguments)):
                call.block = None
                break
            ready.append(ToolCallReady(block, self._announced))
            self._announced += 1
        return ready

    def _add_fragment(self, fragment: Any) -> bool:
        """Add one fragment; ``True`` when it began a new call (the earlier ones are done)."""
        key = fragment.index
        call = self._calls.get(key)
        function = fragment.function
        if call is not None and fragment.id and call.id != fragment.id and call.name:
            # Some servers send each complete call with index 0; a new id is a new call.
            key = max(self._calls) + 1
            call = None
        began = call is None
        if call is None:
            call = _Call(id=fragment.id or f"call_{uuid.uuid4().hex[:24]}", name="")
            self._calls[key] = call
        elif fragment.id:
            call.id = fragment.id
        if function is not None:
            if function.name and not call.name:
                call.name = function.name
            if function.arguments:
                call.arguments.append(function.arguments)
                call.block = None  # a server that interleaves calls: the announced one was early
        return began

    def finish(self) -> ModelResponse:
        """The assembled response. Raises ``ProviderConnectionError`` if the stream ended
        before the server said why it stopped (a cut connection)."""
        if self._finish is None:
            raise ProviderConnectionError(
                f"The {self._label} stream ended before the response was complete.",
                provider=self._model_string.partition("/")[0],
            )
        blocks: list[Block] = []
        if self._thinking:
            blocks.append(ThinkingBlock(text="".join(self._thinking)))
        text = "".join(self._text) + "".join(self._refusal)
        if text:
            blocks.append(TextBlock(text=text))
        calls = [self._calls[index].finished() for index in sorted(self._calls)]
        blocks.extend(calls)
        stop = _FINISH.get(self._finish, StopReason.END_TURN)
        if self._refusal:
            stop = StopReason.REFUSAL
        elif calls and stop is StopReason.END_TURN:
            stop = StopReason.TOOL_USE
        if self._usage is None and self._request is not None:
            usage = estimated_usage(self._request, blocks)
        else:
            usage = chat_usage(self._usage)
        return assistant_response(blocks, stop, usage, self._model_string)


def estimated_usage(request: ModelRequest, blocks: list[Block]) -> Usage:
    """tether's estimate of a response's usage, marked ``estimated``: for servers that
    stream no usage (some local servers ignore ``stream_options.include_usage``)."""
    from tether.messages import Message
    from tether.tokens import estimate_message, estimate_request

    return Usage(
        input_tokens=estimate_request(request.system, request.tools, request.messages),
        output_tokens=estimate_message(Message(role="assistant", content=blocks)),
        estimated=True,
    )


def chat_usage(raw: Any) -> Usage:
    """tether usage from a Chat Completions ``usage`` object (absent fields count 0)."""
    if raw is None:
        return Usage()
    prompt = getattr(raw, "prompt_tokens_details", None)
    completion = getattr(raw, "completion_tokens_details", None)
    return Usage(
        input_tokens=raw.prompt_tokens or 0,
        output_tokens=raw.completion_tokens or 0,
        cache_read_tokens=(getattr(prompt, "cached_tokens", None) or 0) if prompt else 0,
        cache_write_tokens=(getattr(prompt, "cache_write_tokens", None) or 0) if prompt else 0,
        reasoning_tokens=(getattr(completion, "reasoning_tokens", None) or 0) if completion else 0,
    )


def completion_chunks(completion: Any) -> list[Any]:
    """An unstreamed ``ChatCompletion`` as the chunks a stream of it would have carried
    (one delta with the whole message, then the usage), for :class:`ChatAssembler`."""
    from openai.types.chat import ChatCompletionChunk

    base = {
        "id": completion.id or "chatcmpl",
        "object": "chat.completion.chunk",
        "created": completion.created or 0,
        "model": completion.model or "",
    }
    chunks: list[Any] = []
    for choice in completion.choices[:1]:
        message = choice.message.model_dump(exclude_none=True)
        message.pop("role", None)
        calls = message.pop("tool_calls", None) or []
        for index, call in enumerate(calls):
            call["index"] = index
        if calls:
            message["tool_calls"] = calls
        chunks.append(
            ChatCompletionChunk.model_validate(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": message,
                            "finish_reason": choice.finish_reason or "stop",
                        }
                    ],
                }
            )
        )
    usage = completion.usage.model_dump() if completion.usage is not None else None
    chunks.append(ChatCompletionChunk.model_validate({**base, "choices": [], "usage": usage}))
    return chunks
