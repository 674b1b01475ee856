"""``ScriptedProvider``: a provider that plays back queued replies, for tests.

::

    provider = ScriptedProvider([
        Reply(text="Let me add.", tool_calls=[call("add", a=1, b=2)]),
        rate_limited(retry_after=1.5),          # the next call fails with a 429 ...
        Reply(text="1 + 2 = 3"),                # ... and the retry gets this
    ])
    agent = tether.Agent(provider, tools=[add])

Each model call takes the next item of the queue. A :class:`Reply` is streamed as
deltas (``chunk`` characters each), then one ``ToolCallReady`` per tool call, and ends
with a ``ModelResponse``; ``pause`` seconds pass before each of those streamed items. A
:class:`Failure` raises its error, optionally after streaming part of a reply first (a
mid-stream drop).
Instead of a queue, ``handler(request) -> Reply | Failure`` computes replies from the
request, like pydantic-ai's ``FunctionModel``. Every request is kept in ``requests``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import (
    AuthenticationError,
    ContextOverflowError,
    OverloadedError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
    TetherError,
)
from ..events import TextDelta, ThinkingDelta
from ..messages import Message, StopReason, TextBlock, ThinkingBlock, ToolCallBlock, Usage
from ..provider import (
    BaseProvider,
    ModelCapabilities,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    ToolCallReady,
)

__all__ = [
    "Failure",
    "Reply",
    "ScriptExhausted",
    "ScriptedProvider",
    "auth_failed",
    "call",
    "connection_dropped",
    "context_overflow",
    "overloaded",
    "rate_limited",
    "server_error",
]


class ScriptExhausted(TetherError):
    """The provider was called more often than the script has replies."""


def call(name: str, /, id: str | None = None, **arguments: Any) -> ToolCallBlock:
    """A tool call for a :class:`Reply`; ids default to ``call_1``, ``call_2``, ..."""
    return ToolCallBlock(id=id or "", name=name, arguments=arguments)


@dataclass(slots=True)
class Reply:
    """One scripted model response.

    ``text`` streams in ``chunk``-character deltas (``chunks`` gives the deltas
    explicitly instead). ``stop_reason`` defaults to ``tool_use`` when there are tool
    calls and ``end_turn`` otherwise. A tool call whose ``raw_arguments`` is set models a
    model that sent arguments that are not valid JSON. ``pause`` (seconds) is waited
    before each delta and each tool call's ``ToolCallReady`` (a slow stream);
    ``announce=False`` sends no ``ToolCallReady`` (a provider that cannot tell).
    """

    text: str = ""
    tool_calls: Sequence[ToolCallBlock] = ()
    thinking: str | None = None
    signature: str | None = None
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    chunk: int = 8
    chunks: Sequence[str] | None = None
    pause: float = 0.0
    announce: bool = True

    def deltas(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        if not self.text:
            return []
        return [self.text[i : i + self.chunk] for i in range(0, len(self.text), self.chunk)]


@dataclass(slots=True)
class Failure:
    """A scripted failure: raise ``error``, after streaming ``partial`` deltas of
    ``partial_reply`` (a mid-stream failure) when given."""

    error: BaseException
    partial_reply: Reply | None = None
    partial: int = 0


def rate_limited(retry_after: float | None = 1.0) -> Failure:
    return Failure(
        RateLimitError("Rate limited (scripted).", retry_after=retry_after, provider="scripted")
    )


def server_error(status: int = 500) -> Failure:
    return Failure(
        ServerError(f"Server error {status} (scripted).", status_code=status, provider="scripted")
    )


def overloaded(after: Reply | None = None, partial: int = 0) -> Failure:
    return Failure(OverloadedError("Overloaded (scripted).", provider="scripted"), after, partial)


def connection_dropped(after: Reply | None = None, partial: int = 0) -> Failure:
    """The connection drops after ``partial`` deltas of ``after`` were streamed."""
    return Failure(
        ProviderConnectionError("Connection dropped (scripted).", provider="scripted"),
        after,
        partial,
    )


def auth_failed(variable: str = "SCRIPTED_API_KEY") -> Failure:
    return Failure(
        AuthenticationError(
            f"The API key was rejected (scripted). Set {variable} to a valid key.",
            provider="scripted",
            status_code=401,
        )
    )


def context_overflow() -> Failure:
    return Failure(
        ContextOverflowError("Prompt is too long (scripted).", provider="scripted", status_code=400)
    )


Script = Reply | Failure


class ScriptedProvider(BaseProvider):
    """Plays back :class:`Reply` and :class:`Failure` items; see the module docstring.

    :param script: the queue of replies; more can be added with :meth:`queue`.
    :param handler: alternatively, a function computing each reply from the request.
    :param capabilities: what the scripted model claims to support.
    """

    name = "scripted"
    default_model = "scripted-model"

    def __init__(
        self,
        script: Iterable[Script] = (),
        *,
        handler: Callable[[ModelRequest], Script] | None = None,
        capabilities: ModelCapabilities | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__()
        self._script: list[Script] = list(script)
        self._position = 0
        self._handler = handler
        self.default_capabilities = capabilities or ModelCapabilities(images_in_tool_results=True)
        self.models = (ModelInfo(self.default_model, self.default_capabilities),)
        self._usage = usage or Usage(input_tokens=10, output_tokens=5)
        self._ids = itertools.count(1)
        self.requests: list[ModelRequest] = []
        self.record_requests = True

    def queue(self, *items: Script) -> ScriptedProvider:
        """Append replies to the script; returns self for chaining."""
        self._script.extend(items)
        return self

    def reset(self, script: Iterable[Script]) -> None:
        """Replace the script and start from its first item."""
        self._script = list(script)
        self._position = 0

    @property
    def remaining(self) -> int:
        return len(self._script) - self._position

    def capabilities(self, model: str) -> ModelCapabilities:
        return self.default_capabilities

    def _next(self, request: ModelRequest) -> Script:
        if self._handler is not None:
            return self._handler(request)
        if self._position >= len(self._script):
            raise ScriptExhausted(
                f"ScriptedProvider was called {self._position + 1} times but the script has only "
                f"{len(self._script)} replies. Queue more replies."
            )
        item = self._script[self._position]
        self._position += 1
        return item

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self.record_requests:
            # Snapshot the history: the session keeps growing after this call.
            self.requests.append(copy.copy(request))
            self.requests[-1].messages = list(request.messages)
        item = self._next(request)
        if isinstance(item, Failure):
            if item.partial_reply is not None:
                reply = item.partial_reply
                items = self._items(reply, self._with_ids(reply))[: item.partial]
                async for event in _paced(items, reply.pause):
                    yield event
            raise item.error
        if item.thinking is not None:
            yield ThinkingDelta(item.thinking, item.signature)
        calls = self._with_ids(item) if item.tool_calls else []
        if item.pause:
            async for event in _paced(self._items(item, calls), item.pause):
                yield event
        else:
            for delta in item.deltas():
                yield TextDelta(delta)
            if item.announce:
                for index, tool_call in enumerate(calls):
                    yield ToolCallReady(tool_call, index)
        yield self._response(item, request, calls)

    def _with_ids(self, reply: Reply) -> list[ToolCallBlock]:
        return [
            c if c.id else c.model_copy(update={"id": f"call_{next(self._ids)}"})
            for c in reply.tool_calls
        ]

    @staticmethod
    def _items(reply: Reply, calls: list[ToolCallBlock]) -> list[ProviderEvent]:
        items: list[ProviderEvent] = [TextDelta(delta) for delta in reply.deltas()]
        if reply.announce:
            items.extend(ToolCallReady(c, i) for i, c in enumerate(calls))
        return items

    def _response(
        self, reply: Reply, request: ModelRequest, calls: list[ToolCallBlock]
    ) -> ModelResponse:
        content: list[Any] = []
        if reply.thinking is not None:
            content.append(ThinkingBlock(text=reply.thinking, signature=reply.signature))
        text = reply.text if reply.chunks is None else "".join(reply.chunks)
        if text:
            content.append(TextBlock(text=text))
        content.extend(calls)
        stop = reply.stop_reason or (
            StopReason.TOOL_USE if reply.tool_calls else StopReason.END_TURN
        )
        model = f"{self.name}/{request.model}"
        message = Message(role="assistant", content=content)
        message.meta.model = model
        return ModelResponse(
            message=message, stop_reason=stop, usage=reply.usage or self._usage, model=model
        )


async def _paced(items: Sequence[ProviderEvent], pause: float) -> AsyncIterator[ProviderEvent]:
    for item in items:
        if pause:
            await asyncio.sleep(pause)
        yield item
