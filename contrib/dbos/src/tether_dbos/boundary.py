""":class:`DbosBoundary`: every model request and every tool call of a run is a DBOS
step, so a restarted worker replays the loop with their recorded results."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from dbos import DBOS

from tether.boundary import ExecuteTool
from tether.errors import ProviderError
from tether.events import event_to_dict
from tether.messages import ToolCallBlock, ToolResultBlock
from tether.provider import (
    ModelCapabilities,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderEvent,
    ToolCallReady,
)

from .journal import Journal, StepStream

__all__ = ["DbosBoundary", "DurableProvider"]

_DELTA_BATCH_S = 0.05
"""Deltas are published in batches at most this far apart (one database write each)."""


class DbosBoundary:
    """The :class:`~tether.boundary.RunBoundary` of a durable run.

    A tool call's idempotency key is the identity of its step
    (``<workflow id>:<step id>``): the same on every execution of that step, different for
    every other call, so a tool with side effects can recognise a call it has already
    performed when a worker died before the step's result was recorded.
    """

    def __init__(self, journal: Journal, *, deltas: bool = True) -> None:
        self.journal = journal
        self.deltas = deltas

    def wrap_provider(self, provider: Provider) -> Provider:
        return DurableProvider(provider, self.journal, deltas=self.deltas)

    async def call_tool(self, call: ToolCallBlock, execute: ExecuteTool) -> ToolResultBlock:
        async def work(stream: StepStream) -> ToolResultBlock:
            return await execute(call, f"{DBOS.workflow_id}:{DBOS.step_id}")

        result = await self.journal.step(f"tether.tool.{call.name}", work)
        assert result is not None
        return result


class DurableProvider:
    """A provider whose every request is one DBOS step.

    Deltas are published to the run's event stream from inside the step, in batches at
    most 50 ms apart (the first carries the run's pending events, then a ``model_step``
    marker, so a reader can tell when a step is executed a second time after a crash and
    drop the first attempt's deltas); those of the last 50 ms are recorded with the step
    and published with the next events (a quick request writes nothing itself). The
    runner receives only the recorded :class:`~tether.provider.ModelResponse`. The session writes the step carries start
    with the request (a request has no side effect; a write refused meanwhile cancels it),
    and the step does not wait for them: the next step does, before a tool acts. A
    failure is recorded too (tether errors pickle with their attributes), so a replay
    retries exactly as the first execution did.
    """

    def __init__(self, inner: Provider, journal: Journal, *, deltas: bool) -> None:
        self.inner = inner
        self.journal = journal
        self.name = inner.name
        self.deltas = deltas

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield await self.complete(request)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.journal.step(
            "tether.model", lambda stream: self._call(request, stream), session_alongside=True
        )
        assert response is not None
        return response

    async def _call(self, request: ModelRequest, stream: StepStream) -> ModelResponse:
        batch: list[dict[str, Any]] = []
        if self.deltas:
            batch.append({"type": "model_step", "step": DBOS.step_id})
        last = time.monotonic()
        response: ModelResponse | None = None
        async for event in self.inner.stream(request):
            if isinstance(event, ModelResponse):
                response = event
            elif self.deltas and not isinstance(event, ToolCallReady):  # run events only
                batch.append(event_to_dict(event))
                if time.monotonic() - last >= _DELTA_BATCH_S:
                    await stream.write(batch)
                    batch, last = [], time.monotonic()
        stream.later(batch)  # the last moments' deltas: with the next events
        if response is None:
            raise ProviderError(
                f"The {self.name} provider ended its stream without a response.",
                provider=self.name,
            )
        return response

    async def validate_auth(self) -> None:
        await self.inner.validate_auth()

    def capabilities(self, model: str) -> ModelCapabilities:
        return self.inner.capabilities(model)

    def catalogue(self) -> Sequence[ModelInfo]:
        return self.inner.catalogue()

    async def aclose(self) -> None:
        return None  # the worker owns the real provider

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
