"""Every wait of a run has a deadline: a provider that stalls or trickles keep-alives over
a real loopback connection, through the official SDK, cannot hold a run past its wall
time; an idle stream is retried; retries share a total budget."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import anthropic  # noqa: F401  (the first import of an SDK can take seconds on a busy
import openai  # noqa: F401     machine; that is not what these tests measure)
import pytest

from tether import Agent
from tether.config import Config, LimitsConfig, ProviderConfig
from tether.errors import ProviderTimeoutError, RetryBudgetExceeded, WallTimeExceeded
from tether.events import Done, Retry, RunEvent
from tether.result import Outcome
from tether.retry import RetryPolicy
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, rate_limited
from tether_testing.http import FakeResponse, FakeServer

MODEL = "gpt-4.1"


def _chunk(delta: dict[str, Any]) -> bytes:
    body = {
        "id": "chatcmpl-stall",
        "object": "chat.completion.chunk",
        "created": 1756306542,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
        "usage": None,
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _anthropic(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


CLAUDE = "claude-sonnet-4-6"
WIRES: dict[str, tuple[bytes, bytes]] = {
    # the opening of a streamed answer, and the keep-alive the provider sends while idle
    "openai": (_chunk({"role": "assistant", "content": "Thinking"}), b": keep-alive\n\n"),
    "anthropic": (
        _anthropic(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stall",
                    "type": "message",
                    "role": "assistant",
                    "model": CLAUDE,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 12, "output_tokens": 1},
                },
            },
        )
        + _anthropic(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        + _anthropic(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Thinking"},
            },
        ),
        _anthropic("ping", {"type": "ping"}),
    ),
}


def stalled(release: threading.Event, wire: str = "openai") -> FakeResponse:
    """Headers and the start of an answer, then nothing until ``release``."""

    def chunks() -> Iterator[bytes]:
        yield WIRES[wire][0]
        release.wait(30)

    return FakeResponse(status=200, headers={"content-type": "text/event-stream"}, chunks=chunks())


def trickling(release: threading.Event, wire: str = "openai") -> FakeResponse:
    """The start of an answer, then a keep-alive every 50 ms until ``release``."""

    def chunks() -> Iterator[bytes]:
        yield WIRES[wire][0]
        while not release.wait(0.05):
            yield WIRES[wire][1]

    return FakeResponse(status=200, headers={"content-type": "text/event-stream"}, chunks=chunks())


def answered(text: str) -> FakeResponse:
    finish = {
        "id": "chatcmpl-ok",
        "object": "chat.completion.chunk",
        "created": 1756306542,
        "model": MODEL,
        "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
        "usage": None,
    }
    frames = [
        _chunk({"role": "assistant", "content": text}),
        f"data: {json.dumps(finish)}\n\n".encode(),
        b"data: [DONE]\n\n",
    ]
    return FakeResponse(status=200, headers={"content-type": "text/event-stream"}, chunks=frames)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def server(release: threading.Event) -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake
        release.set()


def agent_for(server: FakeServer, wire: str = "openai", **limits: Any) -> Agent:
    if wire == "openai":
        model, settings = f"openai/{MODEL}", {"base_url": server.url + "/v1", "api": "chat"}
    else:
        model, settings = f"anthropic/{CLAUDE}", {"base_url": server.url}
    config = Config(
        providers={wire: ProviderConfig.model_validate({**settings, "api_key": "test-key"})}
    )
    agent = Agent(
        model,
        config=config,
        limits=LimitsConfig(**limits),
        retry=RetryPolicy(base_delay=0.01, max_delay=0.05),
    )
    agent.provider()  # build the provider and its SDK client before the clock starts
    return agent


async def run_within(agent: Agent, bound: float) -> tuple[list[RunEvent], InMemorySession]:
    """Run to the end, failing the test if it does not end within ``bound`` seconds."""
    session = InMemorySession()
    events: list[RunEvent] = []
    async with asyncio.timeout(bound):
        async for event in agent.stream("Think hard.", session=session):
            events.append(event)
    await agent.aclose()
    return events, session


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("respond", [stalled, trickling], ids=["stalled", "trickling"])
async def test_wall_time_bounds_a_stalled_or_trickling_stream(
    server: FakeServer, release: threading.Event, respond: Any, wire: str
) -> None:
    server.queue(respond(release, wire))
    wall_time = 1.0
    agent = agent_for(server, wire, wall_time_s=wall_time, stream_idle_timeout_s=None)
    events, session = await run_within(agent, wall_time + 1.0)
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.outcome is Outcome.LIMIT
    assert isinstance(done.result.error, WallTimeExceeded)
    assert "wall-time limit of 1 s" in str(done.result.error)
    assert [m.role for m in session.messages] == ["user"]  # the partial answer is not history
    assert len(server.requests) == 1


async def test_an_idle_stream_is_retried_with_a_timeout_error(
    server: FakeServer, release: threading.Event
) -> None:
    server.queue(trickling(release), answered("Here it is."))
    agent = agent_for(server, stream_idle_timeout_s=0.3, wall_time_s=20)
    events, session = await run_within(agent, 21)
    retries = [e for e in events if isinstance(e, Retry)]
    assert len(retries) == 1 and isinstance(retries[0].error, ProviderTimeoutError)
    assert "sent nothing for 0.3 s" in str(retries[0].error)
    done = events[-1]
    assert isinstance(done, Done) and done.result.outcome is Outcome.COMPLETED
    assert done.result.output == "Here it is." and done.result.retries == 1
    assert_invariant(session.messages)


async def test_retry_after_beyond_the_retry_budget_fails_at_once() -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    provider = ScriptedProvider([rate_limited(retry_after=0.01), rate_limited(retry_after=60)])
    agent = Agent(
        provider,
        config=Config(),
        limits=LimitsConfig(retry_budget_s=30),
        retry=RetryPolicy(sleep=sleep),
    )
    with pytest.raises(RetryBudgetExceeded) as info:
        await agent.run("hi")
    assert slept == [0.01]  # the first retry-after was honoured, the second not waited for
    message = str(info.value)
    assert "asked to wait 60 s" in message and "retry budget of 30 s" in message
    assert "Rate limited" in message and info.value.retryable is False


async def test_retry_after_within_the_budget_is_honoured() -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    provider = ScriptedProvider([rate_limited(retry_after=2.5), Reply(text="ok")])
    agent = Agent(provider, config=Config(), retry=RetryPolicy(sleep=sleep))
    result = await agent.run("hi")
    assert result.output == "ok" and slept == [2.5]
