"""Error translation details that the loopback tests do not reach."""

from __future__ import annotations

from typing import Any

import pytest

from tether.config import ProviderConfig
from tether.errors import (
    InvalidRequestError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
)
from tether.messages import Message
from tether.provider import ModelRequest
from tether_openai.errors import retry_after
from tether_openai.provider import OpenAIProvider
from tether_testing.http import FakeResponse, FakeServer


def test_retry_after_headers() -> None:
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


async def fail_with(
    server: FakeServer, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Exception:
    server.queue(FakeResponse.json(body, status=status, headers=headers))
    provider = OpenAIProvider(ProviderConfig(base_url=server.url + "/v1", api_key="sk-k"))
    with pytest.raises(Exception) as info:
        async for _ in provider.stream(ModelRequest(model="gpt-4.1", messages=[Message.user("x")])):
            pass
    return info.value


def body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


async def test_quota_exhaustion_is_not_retried(fake_server: FakeServer) -> None:
    error = await fail_with(
        fake_server,
        429,
        body("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
    )
    assert isinstance(error, RateLimitError) and not error.retryable


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (403, PermissionDeniedError),
        (404, InvalidRequestError),
        (500, ServerError),
        (503, OverloadedError),
        (400, InvalidRequestError),
    ],
)
async def test_status_codes_map_to_the_tether_tree(
    fake_server: FakeServer, status: int, expected: type[Exception]
) -> None:
    error = await fail_with(fake_server, status, body("Something", "some_error"))
    assert type(error) is expected
    assert error.__cause__ is not None and type(error.__cause__).__module__.startswith("openai")
