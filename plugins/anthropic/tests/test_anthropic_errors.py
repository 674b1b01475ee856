"""Failures, as the runner sees them: typed errors, retries, compaction on overflow."""

from __future__ import annotations

import pytest

from tether import Message
from tether.compaction import CompactionResult
from tether.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from tether.events import Compaction, Retry, TextDelta
from tether.provider import ModelRequest
from tether.result import Outcome
from tether_testing.http import FakeResponse


async def test_rate_limit_waits_exactly_the_retry_after_header_then_succeeds(
    fake_server, make_agent, sleep, wire
):
    fake_server.queue(
        wire.api_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            {"retry-after": "7"},
        ),
        wire.text_reply("fine now"),
    )
    events = [e async for e in make_agent().stream("hi")]
    retries = [e for e in events if isinstance(e, Retry)]
    assert len(retries) == 1
    assert retries[0].delay == 7.0
    assert isinstance(retries[0].error, RateLimitError) and retries[0].error.retry_after == 7.0
    assert sleep.delays == [7.0]
    assert events[-1].result.output == "fine now"
    assert events[-1].result.retries == 1
    assert len(fake_server.requests) == 2


async def test_retry_after_ms_is_preferred_and_converted_to_seconds(
    fake_server, make_provider, wire
):
    fake_server.queue(
        wire.api_error(
            429, "rate_limit_error", "slow down", {"retry-after-ms": "1500", "retry-after": "2"}
        )
    )
    with pytest.raises(RateLimitError) as caught:
        async for _ in make_provider().stream(
            ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
        ):
            pass
    assert caught.value.retry_after == 1.5
    assert caught.value.provider == "anthropic"
    assert isinstance(caught.value.__cause__, Exception)
    assert type(caught.value.__cause__).__module__.startswith("anthropic")


async def test_rejected_key_fails_at_once_naming_the_variable(fake_server, make_agent, sleep, wire):
    fake_server.queue(wire.api_error(401, "authentication_error", "invalid x-api-key"))
    agent = make_agent(
        provider={"api_key": "sk-ant-wrong-secret", "api_key_env": "WORK_ANTHROPIC_KEY"}
    )
    with pytest.raises(AuthenticationError) as caught:
        await agent.run("hi")
    message = str(caught.value)
    assert "WORK_ANTHROPIC_KEY" in message
    assert "sk-ant-wrong-secret" not in message
    assert len(fake_server.requests) == 1
    assert sleep.delays == []


async def test_missing_key_fails_before_any_request_naming_the_variable(
    fake_server, make_agent, wire
):
    agent = make_agent(provider={"api_key": None})
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await agent.run("hi")
    assert fake_server.requests == []


async def test_key_is_read_from_the_environment_and_sent(
    fake_server, make_agent, monkeypatch, wire
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    fake_server.queue(wire.text_reply("ok"))
    await make_agent(provider={"api_key": None}).run("hi")
    headers = fake_server.requests[0].headers
    sent = {headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")}
    assert "sk-ant-from-env" in sent
    assert headers["anthropic-version"]
    assert fake_server.requests[0].path == "/v1/messages"


async def test_overloaded_error_event_inside_a_200_stream_is_retried(
    fake_server, make_agent, sleep, wire
):
    broken = [
        wire.message_start(),
        *wire.text_block(0, ["Partial "]),
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ]
    fake_server.queue(FakeResponse.sse(broken), wire.text_reply("Complete answer"))
    events = [e async for e in make_agent().stream("hi")]
    retry = next(e for e in events if isinstance(e, Retry))
    assert isinstance(retry.error, OverloadedError)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Partial ", "Complete answer"]  # a consumer drops the first after Retry
    result = events[-1].result
    assert [m.text for m in result.messages if m.role == "assistant"] == ["Complete answer"]


async def test_http_529_is_overloaded_and_500_is_a_server_error(fake_server, make_provider, wire):
    fake_server.queue(
        wire.api_error(529, "overloaded_error", "Overloaded"),
        wire.api_error(500, "api_error", "Internal server error"),
    )
    provider = make_provider()
    request = ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
    with pytest.raises(OverloadedError) as overloaded:
        async for _ in provider.stream(request):
            pass
    assert overloaded.value.retryable and overloaded.value.status_code == 529
    with pytest.raises(ServerError):
        async for _ in provider.stream(request):
            pass


async def test_dropped_connection_mid_stream_is_retried_without_duplicated_text(
    fake_server, make_agent, sleep, wire
):
    events = wire.reply(wire.text_block(0, ["Hello ", "there ", "friend"]))
    fake_server.queue(FakeResponse.sse(events, drop_after=4), FakeResponse.sse(events))
    run_events = [e async for e in make_agent().stream("hi")]
    retry = next(e for e in run_events if isinstance(e, Retry))
    assert isinstance(retry.error, ProviderConnectionError)
    result = run_events[-1].result
    assert result.outcome is Outcome.COMPLETED
    assert result.output == "Hello there friend"
    assistant = [m for m in result.messages if m.role == "assistant"]
    assert len(assistant) == 1 and assistant[0].text == "Hello there friend"


async def test_stream_closed_before_message_stop_is_a_connection_error(
    fake_server, make_provider, wire
):
    truncated = wire.reply(wire.text_block(0, ["cut"]))[:-2]  # no message_delta / message_stop
    fake_server.queue(FakeResponse.sse(truncated))
    with pytest.raises(ProviderConnectionError, match="message_stop"):
        async for _ in make_provider().stream(
            ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
        ):
            pass


class ForcedOnlyCompaction:
    """Drops everything but the last message, and only when the provider overflowed."""

    name = "test-forced"

    def __init__(self) -> None:
        self.calls: list[bool] = []

    async def compact(self, context):
        self.calls.append(context.force)
        if not context.force:
            return None
        kept = [context.messages[-1]]
        return CompactionResult(messages=kept, tokens_before=1000, tokens_after=10)


async def test_prompt_too_long_compacts_and_retries_once(fake_server, make_agent, wire):
    from tether.sessions import InMemorySession

    session = InMemorySession()
    session.append(Message.user("an old, very long question"))
    session.append(Message(role="assistant", content=[{"type": "text", "text": "an old answer"}]))
    fake_server.queue(
        wire.api_error(
            400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
        ),
        wire.text_reply("short answer"),
    )
    strategy = ForcedOnlyCompaction()
    events = [
        e async for e in make_agent(compaction=strategy).stream("new question", session=session)
    ]

    assert strategy.calls == [True]
    assert any(isinstance(e, Compaction) for e in events)
    assert events[-1].result.output == "short answer"
    assert len(fake_server.requests[0].json()["messages"]) == 3
    assert [m["content"][0]["text"] for m in fake_server.requests[1].json()["messages"]] == [
        "new question"
    ]


async def test_overflow_twice_fails_with_context_overflow(fake_server, make_agent, wire):
    too_long = wire.api_error(
        400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum"
    )
    fake_server.queue(too_long, too_long)
    with pytest.raises(ContextOverflowError):
        await make_agent(compaction=ForcedOnlyCompaction()).run("x")
    assert len(fake_server.requests) == 2


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (403, "permission_error", PermissionDeniedError),
        (404, "not_found_error", InvalidRequestError),
        (400, "invalid_request_error", InvalidRequestError),
    ],
)
async def test_client_errors_are_not_retried(
    fake_server, make_agent, sleep, wire, status, kind, error
):
    fake_server.queue(wire.api_error(status, kind, "nope"))
    with pytest.raises(error) as caught:
        await make_agent().run("x")
    assert not isinstance(caught.value, ContextOverflowError)
    assert "nope" in str(caught.value)
    assert sleep.delays == []


async def test_unreachable_server_is_a_connection_error(make_provider, wire):
    import socket

    from tether.config import ProviderConfig
    from tether_anthropic.provider import AnthropicProvider

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = AnthropicProvider(ProviderConfig(api_key="k", base_url=f"http://127.0.0.1:{port}"))
    with pytest.raises(ProviderConnectionError):
        async for _ in provider.stream(
            ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
        ):
            pass
    await provider.aclose()


async def test_validate_auth_checks_the_key_is_configured_without_a_request(
    fake_server, make_provider
):
    await make_provider().validate_auth()
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await make_provider(api_key=None).validate_auth()
    assert fake_server.requests == []


async def test_verify_key_asks_the_api(fake_server, make_provider, wire):
    fake_server.queue(
        FakeResponse.json({"data": [], "has_more": False, "first_id": None, "last_id": None})
    )
    await make_provider().verify_key()
    assert fake_server.requests[0].path.startswith("/v1/models")

    fake_server.queue(wire.api_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await make_provider().verify_key()

    fake_server.queue(
        FakeResponse(status=200, headers={"content-type": "text/plain"}, body=b"not json")
    )
    with pytest.raises(ProviderError, match="unexpected answer"):
        await make_provider().verify_key()


async def test_a_stream_that_breaks_the_event_protocol_is_a_provider_error(
    fake_server, make_provider, wire
):
    from tether.errors import ProviderError

    events = [
        wire.message_start(),
        wire.delta(3, {"type": "text_delta", "text": "orphan"}),
        *wire.message_end(),
    ]
    fake_server.queue(FakeResponse.sse(events))
    with pytest.raises(ProviderError, match="event format") as caught:
        async for _ in make_provider().stream(
            ModelRequest(model=wire.MODEL, messages=[Message.user("x")])
        ):
            pass
    assert not caught.value.retryable
