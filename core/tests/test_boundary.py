"""A RunBoundary sees every model request and every tool call of a run, and can choose
the idempotency key a tool receives; tether errors survive pickling (what a durable
engine does to a step's failure)."""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from typing import Any

import tether
from tether.boundary import ExecuteTool
from tether.errors import RateLimitError, SessionConflictError
from tether.messages import ToolCallBlock, ToolResultBlock
from tether.provider import ModelRequest, Provider
from tether.testing import Reply, ScriptedProvider, call


class CountingProvider:
    """Delegates to ``inner`` and counts the requests."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.requests += 1
        async for event in self.inner.stream(request):
            yield event


class Recorder:
    def __init__(self) -> None:
        self.provider: CountingProvider | None = None
        self.calls: list[str] = []

    def wrap_provider(self, provider: Provider) -> Provider:
        self.provider = CountingProvider(provider)
        return self.provider  # type: ignore[return-value]

    async def call_tool(self, call: ToolCallBlock, execute: ExecuteTool) -> ToolResultBlock:
        self.calls.append(call.name)
        return await execute(call, f"step-key-{len(self.calls)}")


async def test_a_boundary_wraps_model_requests_and_tool_calls() -> None:
    keys: list[str] = []

    @tether.tool
    def remember(ctx: tether.ToolContext, text: str) -> str:
        """Remember a text."""
        keys.append(ctx.idempotency_key)
        return "ok"

    model = ScriptedProvider(
        [
            Reply(tool_calls=[call("remember", text="a"), call("remember", text="b")]),
            Reply(text="done"),
        ]
    )
    agent = tether.Agent(model, tools=[remember], config=tether.Config())
    boundary = Recorder()
    result = None
    async for event in agent.stream("go", boundary=boundary):
        if isinstance(event, tether.events.Done):
            result = event.result
    assert result is not None and result.output == "done"
    assert boundary.provider is not None and boundary.provider.requests == 2
    assert boundary.calls == ["remember", "remember"]
    assert sorted(keys) == ["step-key-1", "step-key-2"]

    # Without a boundary the key is the usual (session, call id) one.
    keys.clear()
    plain = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("remember", text="c")]), Reply(text="ok")]),
        tools=[remember],
        config=tether.Config(),
    )
    await plain.run("go")
    assert len(keys) == 1 and not keys[0].startswith("step-key")


def test_tether_errors_survive_pickling_with_their_attributes() -> None:
    error = RateLimitError("slow down", retry_after=3.5, provider="acme")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is RateLimitError and str(copy) == "slow down"
    assert copy.retry_after == 3.5 and copy.provider == "acme" and copy.retryable
    conflict = pickle.loads(pickle.dumps(SessionConflictError("x", session="s", expected=1)))
    assert conflict.session == "s" and conflict.expected == 1
