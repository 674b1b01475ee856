"""Translate google-genai and httpx exceptions into the :mod:`tether.errors` tree.

The Gemini API reports errors as ``{"error": {"code", "message", "status", "details"}}``,
with the HTTP status or, mid-stream, as an SSE event carrying the same object; the SDK
raises both as ``google.genai.errors.APIError``. What each becomes:

=====================================================  ===========================
401 UNAUTHENTICATED, 400/403 with an invalid API key   ``AuthenticationError``
403 PERMISSION_DENIED                                  ``PermissionDeniedError``
429 RESOURCE_EXHAUSTED                                 ``RateLimitError`` (``retry_after``
                                                       from the RetryInfo detail or the
                                                       ``retry-after`` header)
503 UNAVAILABLE ("The model is overloaded")            ``OverloadedError``
504 DEADLINE_EXCEEDED                                  ``ProviderTimeoutError``
other 5xx                                              ``ServerError``
400 "...exceeds the maximum number of tokens..."       ``ContextOverflowError``
other 4xx                                              ``InvalidRequestError``
httpx timeouts / transport errors                      ``ProviderTimeoutError`` /
                                                       ``ProviderConnectionError``
=====================================================  ===========================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.config import ProviderConfig
from tether.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    endpoint_of,
    error_class_for_status,
    error_for_status,
)
from tether.retry import parse_retry_after

from .client import key_hint

__all__ = ["GEMINI_API", "Api", "translate_error"]

PROVIDER = "google"

_OVERFLOW = re.compile(
    r"exceeds the maximum number of tokens|input token count.*exceeds|too many tokens|"
    r"request payload size exceeds",
    re.IGNORECASE,
)
_BAD_KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED", "API_KEY_EXPIRED"})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?)s\s*$")


@dataclass(frozen=True, slots=True)
class Api:
    """Which API the errors come from, for their messages: the provider name, how to
    call the API, its configuration section, and what to do about rejected credentials
    or permissions (``None``: the Gemini Developer API's own advice)."""

    provider: str = PROVIDER
    label: str = "The Gemini API"
    auth_hint: str | None = None
    permission_hint: str = (
        "The key is valid but may not use this model or feature; "
        "check the project's access in Google AI Studio."
    )


GEMINI_API = Api()


def translate_error(
    exc: BaseException, config: ProviderConfig, model: str | None = None, api: Api = GEMINI_API
) -> ProviderError:
    """The tether error for ``exc`` (raise it ``from exc``). Unknown exceptions become a
    non-retryable ``ProviderError`` that names their type, so nothing vendor-specific leaks."""
    import httpx
    from google.genai import errors as genai_errors

    name, label = api.provider, api.label
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, genai_errors.APIError):
        return _from_api_error(exc, config, model, api)
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeoutError(
            f"{label} did not answer in time ({type(exc).__name__}). Raise "
            f"[providers.{name}] timeout if responses are legitimately slow.",
            provider=name,
        )
    if isinstance(exc, httpx.TransportError | httpx.StreamError):
        detail = str(exc) or type(exc).__name__
        at = endpoint_of(exc)
        return ProviderConnectionError(
            f"The connection to {label.removeprefix('The ')}{f' ({at})' if at else ''} failed "
            f"or dropped: {detail}. Check that the server is reachable.",
            provider=name,
        )
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        return ProviderError(
            f"{label} sent a response the SDK could not parse: {_shorten(str(exc))}",
            provider=name,
            retryable=True,
        )
    return ProviderError(
        f"The Gemini request failed with {type(exc).__name__}: {_shorten(str(exc))}",
        provider=name,
    )


_STATUS_OF = {
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
"""The HTTP status a gRPC status name stands for, when the code does not say."""


def _from_api_error(exc: Any, config: ProviderConfig, model: str | None, api: Api) -> ProviderError:
    code: int = exc.code or 0
    status: str = exc.status or ""
    message: str = exc.message or str(exc)
    error = _error_object(exc.details)
    reasons = {d.get("reason") for d in _details(error) if isinstance(d, Mapping)}
    if reasons & _BAD_KEY_REASONS:
        effective = 401
    elif code in (401, 403, 404, 429, 503, 504) or code >= 500 or status not in _STATUS_OF:
        effective = code
    else:
        effective = _STATUS_OF[status]
    where = f"{code} {status}".strip()
    if error_class_for_status(effective) is InvalidRequestError and _OVERFLOW.search(message):
        return ContextOverflowError(
            f"The prompt is longer than the model's context window ({where})"
            f"{_at(getattr(exc, 'response', None))}: {message}",
            provider=api.provider,
            status_code=code,
        )
    name = f' "{model}"' if model else ""
    translated = error_for_status(
        effective,
        message,
        provider=api.provider,
        label=api.label,
        where=where,
        endpoint=endpoint_of(getattr(exc, "response", None)),
        retry_after=_retry_after(exc, error),
        hints={
            AuthenticationError: api.auth_hint or f"{key_hint(config)}.",
            PermissionDeniedError: api.permission_hint,
            RateLimitError: "Gemini rate limit or quota reached.",
            InvalidRequestError: f"Check the model name{name}; `tether models` lists known "
            "Gemini models."
            if effective == 404
            else "",
        },
    )
    translated.status_code = code
    return translated


def _error_object(details: Any) -> Mapping[str, Any]:
    if isinstance(details, Mapping):
        inner = details.get("error")
        return inner if isinstance(inner, Mapping) else details
    return {}


def _details(error: Mapping[str, Any]) -> list[Any]:
    value = error.get("details")
    return value if isinstance(value, list) else []


def _retry_after(exc: Any, error: Mapping[str, Any]) -> float | None:
    """Seconds from the ``google.rpc.RetryInfo`` detail (``"37s"``), else from the
    ``retry-after`` (seconds) or ``retry-after-ms`` headers."""
    for detail in _details(error):
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith(
            "google.rpc.RetryInfo"
        ):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return parse_retry_after(getattr(getattr(exc, "response", None), "headers", None))


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _at(response: object) -> str:
    """`` at POST <url>`` for the request behind ``response``, or nothing."""
    endpoint = endpoint_of(response)
    return f" at {endpoint}" if endpoint else ""
