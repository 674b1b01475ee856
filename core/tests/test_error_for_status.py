"""One HTTP-status ladder for every provider plugin: tether.errors.error_for_status."""

from __future__ import annotations

import pytest

from tether.errors import (
    AuthenticationError,
    InvalidRequestError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    endpoint_of,
    error_for_status,
)


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, InvalidRequestError, False),
        (401, AuthenticationError, False),
        (402, PermissionDeniedError, False),
        (403, PermissionDeniedError, False),
        (404, InvalidRequestError, False),
        (408, ProviderTimeoutError, True),
        (422, InvalidRequestError, False),
        (429, RateLimitError, True),
        (500, ServerError, True),
        (502, ServerError, True),
        (503, OverloadedError, True),
        (504, ProviderTimeoutError, True),
        (529, OverloadedError, True),
    ],
)
def test_each_status_gets_its_error_class_and_retry_decision(
    status: int, kind: type[ProviderError], retryable: bool
) -> None:
    error = error_for_status(status, "details from the API", provider="acme")
    assert type(error) is kind and error.retryable is retryable
    assert error.provider == "acme" and error.status_code == status
    assert str(error).startswith("acme ") and "details from the API" in str(error)


def test_the_message_names_the_api_where_and_what_to_do() -> None:
    error = error_for_status(
        401,
        "invalid x-api-key",
        provider="acme",
        label="The Acme API",
        where="HTTP 401, authentication_error",
        hints={AuthenticationError: "Check the key in ACME_API_KEY."},
    )
    assert str(error) == (
        "The Acme API rejected the API key (HTTP 401, authentication_error): invalid x-api-key. "
        "Check the key in ACME_API_KEY."
    )


def test_a_rate_limit_keeps_the_providers_retry_after() -> None:
    error = error_for_status(429, "slow down", provider="acme", retry_after=7.5)
    assert isinstance(error, RateLimitError) and error.retry_after == 7.5


def test_the_endpoint_is_named_without_the_credentials_a_url_can_carry() -> None:
    import httpx

    request = httpx.Request(
        "POST", "http://user:pw-secret@127.0.0.1:8080/v1/models/m:stream?key=k-1"
    )
    response = httpx.Response(400, request=request)
    endpoint = endpoint_of(response)
    assert endpoint == "POST http://127.0.0.1:8080/v1/models/m:stream"
    assert endpoint_of(httpx.Response(400)) is None
    error = error_for_status(400, "bad field", provider="acme", endpoint=endpoint)
    assert str(error) == f"acme rejected the request (HTTP 400) at {endpoint}: bad field"
