"""Fixtures for the tether-anthropic tests: the Messages API's SSE wire format, and
agents wired to a loopback FakeServer through the real plugin and the real SDK."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import SecretStr

import tether_anthropic.plugin
from tether import Agent
from tether.config import Config, ProviderConfig
from tether.runner import RetryPolicy
from tether.testing import RecordingSleep
from tether_testing.http import FakeResponse, FakeServer

MODEL = "claude-haiku-4-5"

Event = tuple[str | None, Any]


def message_start(
    input_tokens: int = 12, cache_read: int = 0, cache_write: int = 0, model: str = MODEL
) -> Event:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        },
    )


def block_start(index: int, block: dict[str, Any]) -> Event:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def delta(index: int, payload: dict[str, Any]) -> Event:
    return (
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": payload},
    )


def block_stop(index: int) -> Event:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_end(stop_reason: str = "end_turn", output_tokens: int = 7, **usage: Any) -> list[Event]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens, **usage},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def text_block(index: int, pieces: Sequence[str]) -> list[Event]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(delta(index, {"type": "text_delta", "text": p}) for p in pieces),
        block_stop(index),
    ]


def tool_block(index: int, call_id: str, name: str, fragments: Sequence[str]) -> list[Event]:
    return [
        block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
        *(delta(index, {"type": "input_json_delta", "partial_json": f}) for f in fragments),
        block_stop(index),
    ]


def thinking_block(index: int, pieces: Sequence[str], signature: str) -> list[Event]:
    return [
        block_start(index, {"type": "thinking", "thinking": "", "signature": ""}),
        *(delta(index, {"type": "thinking_delta", "thinking": p}) for p in pieces),
        delta(index, {"type": "signature_delta", "signature": signature}),
        block_stop(index),
    ]


def redacted_block(index: int, data: str) -> list[Event]:
    return [block_start(index, {"type": "redacted_thinking", "data": data}), block_stop(index)]


def reply(
    *blocks: Iterable[Event], stop_reason: str = "end_turn", ping: bool = True, **start: Any
) -> list[Event]:
    """A whole response: message_start, a ping (the API sends them), the blocks, the end."""
    events: list[Event] = [message_start(**start)]
    if ping:
        events.append(("ping", {"type": "ping"}))
    for block in blocks:
        events.extend(block)
    events.extend(message_end(stop_reason))
    return events


def text_reply(*pieces: str, **start: Any) -> FakeResponse:
    return FakeResponse.sse(reply(text_block(0, pieces), **start))


def api_error(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> FakeResponse:
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test"}
    return FakeResponse(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        body=json.dumps(body).encode(),
    )


@pytest.fixture
def wire() -> SimpleNamespace:
    """Builders for the Messages API's streaming wire format."""
    return SimpleNamespace(
        MODEL=MODEL,
        message_start=message_start,
        block_start=block_start,
        delta=delta,
        block_stop=block_stop,
        message_end=message_end,
        text_block=text_block,
        tool_block=tool_block,
        thinking_block=thinking_block,
        redacted_block=redacted_block,
        reply=reply,
        text_reply=text_reply,
        api_error=api_error,
    )


@pytest.fixture(autouse=True)
def _isolated(offline: Callable[..., None]) -> None:
    """Offline tests see no real key, base URL or plugins from the environment."""
    offline(plugins=())


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


def provider_config(
    server: FakeServer, api_key: str | None = "sk-ant-test-key", **extra: Any
) -> ProviderConfig:
    return ProviderConfig(
        api_key=SecretStr(api_key) if api_key is not None else None, base_url=server.url, **extra
    )


@pytest.fixture
def make_agent(fake_server: FakeServer, sleep: RecordingSleep) -> Callable[..., Agent]:
    """``make_agent(model=..., tools=[...], **agent_kwargs)``: an Agent using the real
    anthropic plugin against ``fake_server``, retrying with the recording sleep."""

    def factory(
        model: str = MODEL, *, provider: dict[str, Any] | None = None, **kwargs: Any
    ) -> Agent:
        config = Config(providers={"anthropic": provider_config(fake_server, **(provider or {}))})
        kwargs.setdefault("retry", RetryPolicy(sleep=sleep))
        return Agent(
            f"anthropic/{model}", config=config, plugins=[tether_anthropic.plugin], **kwargs
        )

    return factory


@pytest.fixture
def make_provider(fake_server: FakeServer) -> Callable[..., Any]:
    """``make_provider(**provider_config)``: an AnthropicProvider against ``fake_server``."""
    from tether_anthropic.provider import AnthropicProvider

    def factory(**extra: Any) -> AnthropicProvider:
        return AnthropicProvider(provider_config(fake_server, **extra))

    return factory
