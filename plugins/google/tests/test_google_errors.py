"""Gemini API error payloads and transport failures become tether errors; no SDK
exception escapes the plugin."""

from __future__ import annotations

import threading

import pytest

from tether.config import ProviderConfig
from tether.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from tether.messages import Message
from tether.provider import ModelRequest
from tether_google import GoogleProvider
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest


async def call(provider: GoogleProvider, model: str = "gemini-2.5-flash") -> None:
    request = ModelRequest(
        model=model, messages=[Message.user("Hi")], capabilities=provider.capabilities(model)
    )
    async for _ in provider.stream(request):
        pass


@pytest.fixture
async def provider(provider_config):  # type: ignore[no-untyped-def]
    google = GoogleProvider(provider_config)
    yield google
    await google.aclose()


@pytest.mark.parametrize(
    ("code", "status", "message", "expected", "retryable"),
    [
        (
            403,
            "PERMISSION_DENIED",
            "Permission denied on resource project demo.",
            PermissionDeniedError,
            False,
        ),
        (
            404,
            "NOT_FOUND",
            "models/gemini-9 is not found for API version v1beta.",
            InvalidRequestError,
            False,
        ),
        (400, "INVALID_ARGUMENT", "Invalid JSON payload received.", InvalidRequestError, False),
        (500, "INTERNAL", "An internal error has occurred.", ServerError, True),
        (
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
            OverloadedError,
            True,
        ),
        (
            504,
            "DEADLINE_EXCEEDED",
            "Deadline expired before operation could complete.",
            ProviderTimeoutError,
            True,
        ),
        (
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            ContextOverflowError,
            False,
        ),
    ],
)
async def test_http_errors_map_to_the_tether_tree(
    provider, server, wire, code, status, message, expected, retryable
):  # type: ignore[no-untyped-def]
    server.queue(wire.error(code, status, message))
    with pytest.raises(expected) as caught:
        await call(provider)
    error = caught.value
    assert type(error) is expected
    assert error.retryable is retryable
    assert error.status_code == code
    assert error.provider == "google"
    assert message in str(error)
    assert error.__cause__ is not None


async def test_model_not_found_points_at_the_catalogue(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta.")
    )
    with pytest.raises(InvalidRequestError, match="tether models"):
        await call(provider, model="gemini-9")


async def test_retry_after_ms_header(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(429, "RESOURCE_EXHAUSTED", "Slow down.", headers={"retry-after-ms": "1500"})
    )
    with pytest.raises(RateLimitError) as caught:
        await call(provider)
    assert caught.value.retry_after == 1.5


async def test_retry_info_with_fractional_seconds(provider, server, wire):  # type: ignore[no-untyped-def]
    detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.250s"}
    server.queue(wire.error(429, "RESOURCE_EXHAUSTED", "Slow down.", detail))
    with pytest.raises(RateLimitError) as caught:
        await call(provider)
    assert caught.value.retry_after == 0.25


async def test_rate_limit_without_a_hint_leaves_the_delay_to_the_runner(provider, server, wire):  # type: ignore[no-untyped-def]
    server.queue(wire.error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted."))
    with pytest.raises(RateLimitError) as caught:
        await call(provider)
    assert caught.value.retry_after is None


async def test_forbidden_unregistered_caller_is_authentication(provider, server, wire):  # type: ignore[no-untyped-def]
    detail = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_SERVICE_BLOCKED",
    }
    server.queue(wire.error(403, "PERMISSION_DENIED", "Requests to this API are blocked.", detail))
    with pytest.raises(AuthenticationError, match="GEMINI_API_KEY"):
        await call(provider)


async def test_a_gateway_html_error_page_is_still_a_tether_error(provider, server):  # type: ignore[no-untyped-def]
    server.queue(
        FakeResponse(
            status=502, headers={"content-type": "text/html"}, body=b"<html>Bad Gateway</html>"
        )
    )
    with pytest.raises(ServerError) as caught:
        await call(provider)
    assert caught.value.status_code == 502


async def test_unparseable_stream_data_is_a_retryable_provider_error(provider, server):  # type: ignore[no-untyped-def]
    server.queue(FakeResponse.sse([(None, "{not json")]))
    with pytest.raises(ProviderError) as caught:
        await call(provider)
    assert caught.value.retryable


async def test_refused_connection_is_a_connection_error(wire):  # type: ignore[no-untyped-def]
    with FakeServer() as closed:
        url = closed.url
    provider = GoogleProvider(ProviderConfig(api_key=wire.key, base_url=url))
    try:
        with pytest.raises(ProviderConnectionError) as caught:
            await call(provider)
        assert caught.value.retryable
    finally:
        await provider.aclose()


async def test_a_server_that_stops_answering_times_out(wire):  # type: ignore[no-untyped-def]
    release = threading.Event()

    def stall(request: RecordedRequest) -> FakeResponse:
        release.wait(timeout=30)
        return wire.reply("too late")

    with FakeServer(stall) as server:
        provider = GoogleProvider(
            ProviderConfig(api_key=wire.key, base_url=server.url, timeout=0.2)
        )
        try:
            with pytest.raises(ProviderTimeoutError) as caught:
                await call(provider)
            assert caught.value.retryable
            assert "timeout" in str(caught.value)
        finally:
            release.set()
            await provider.aclose()


async def test_the_key_never_appears_in_error_messages(provider, server, wire):  # type: ignore[no-untyped-def]
    for response in (
        wire.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
        wire.error(429, "RESOURCE_EXHAUSTED", "Quota exceeded."),
        wire.error(500, "INTERNAL", "Internal error."),
    ):
        server.queue(response)
        with pytest.raises(ProviderError) as caught:
            await call(provider)
        assert wire.key not in str(caught.value)
        assert wire.key not in repr(caught.value.args)
