"""Translation of anthropic SDK and transport exceptions into :mod:`tether.errors`.

The mapping looks at the API's error ``type`` first and the HTTP status second, because
an error can arrive inside a ``200`` stream as an SSE ``error`` event (typically
``overloaded_error``), where the status says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether import errors
from tether.retry import parse_retry_after

__all__ = ["Hints", "malformed_stream", "missing_key_error", "translate"]

PROVIDER = "anthropic"

_OVERFLOW_MARKERS = (
    "prompt is too long",
    "exceed context limit",
    "exceeds the context window",
    "context window",
    "too many total text bytes",
)


def missing_key_error(variable: str) -> errors.AuthenticationError:
    """The error for a request made without any API key."""
    return errors.AuthenticationError(
        f"No Anthropic API key found. Set the {variable} environment variable (or "
        f"`api_key_env` under [providers.anthropic] in tether.toml to name another one).",
        provider=PROVIDER,
    )


def translate(
    exc: BaseException, key_variable: str, *, hints: Hints | None = None
) -> errors.ProviderError | None:
    """The tether error for ``exc``, or ``None`` if ``exc`` is not an SDK or transport
    error (the caller re-raises it unchanged). ``hints`` replace the API-key advice for
    an API reached through a cloud platform."""
    import anthropic
    import httpx2

    if isinstance(exc, anthropic.APIStatusError):
        return _from_status(exc, key_variable, hints)
    if isinstance(exc, anthropic.APITimeoutError):
        return errors.ProviderTimeoutError(
            "The Anthropic API did not answer in time. Raise `timeout` under "
            "[providers.anthropic] if long responses need more.",
            provider=PROVIDER,
        )
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc
        at = errors.endpoint_of(exc)
        return errors.ProviderConnectionError(
            f"Could not connect to the Anthropic API{f' ({at})' if at else ''}: "
            f"{_describe(cause)}. Check the network "
            "and the base URL (ANTHROPIC_BASE_URL or `base_url` under [providers.anthropic]).",
            provider=PROVIDER,
        )
    if isinstance(exc, httpx2.TimeoutException):
        return errors.ProviderTimeoutError(
            f"The Anthropic stream stalled: {_describe(exc)}.", provider=PROVIDER
        )
    if isinstance(exc, httpx2.TransportError | httpx2.StreamError):
        return errors.ProviderConnectionError(
            f"The connection to the Anthropic API dropped mid-stream: {_describe(exc)}.",
            provider=PROVIDER,
        )
    if isinstance(exc, anthropic.AnthropicError):
        return errors.ProviderError(
            f"The anthropic SDK failed: {_describe(exc)}", provider=PROVIDER
        )
    return None


def malformed_stream(exc: BaseException) -> errors.ProviderError | None:
    """The error for a stream that breaks the Messages API's event protocol (undecodable
    data, a delta for a block that was never started), or ``None`` for anything else."""
    if isinstance(exc, ValueError | KeyError):
        return errors.ProviderError(
            f"The Anthropic stream did not follow the Messages API event format: "
            f"{_describe(exc)}. If a proxy sits in between, check that it passes "
            "server-sent events through unchanged.",
            provider=PROVIDER,
        )
    return None


_STATUS_OF_TYPE = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "authentication_error": 401,
    "permission_error": 403,
    "billing_error": 402,
    "not_found_error": 404,
    "api_error": 500,
    "request_too_large": 413,
}
"""The status an API error ``type`` stands for: errors inside a ``200`` stream carry
only their type."""


@dataclass(frozen=True, slots=True)
class Hints:
    """What errors from a platform serving Claude (Vertex AI) say instead of the API-key
    advice: the provider name, how to call the API, and what to do on a 401 or 403."""

    provider: str
    label: str
    rejected: str
    denied: str


def _from_status(exc: Any, key_variable: str, hints: Hints | None = None) -> errors.ProviderError:
    status: int = exc.status_code
    kind = getattr(exc, "type", None) or _body_type(exc.body)
    detail = getattr(exc, "api_message", None) or _body_message(exc.body) or str(exc)
    headers = exc.response.headers if exc.response is not None else None
    where = f"HTTP {status}" if status != 200 else "in the stream"
    label = f"{where}, {kind}" if kind else where
    effective = _STATUS_OF_TYPE.get(kind or "", status)
    if errors.error_class_for_status(effective) is errors.InvalidRequestError and effective != 404:
        lowered = detail.lower()
        if any(marker in lowered for marker in _OVERFLOW_MARKERS):
            return errors.ContextOverflowError(
                f"The prompt does not fit the model's context window ({label})"
                f"{_at(exc.response)}: {detail}",
                provider=hints.provider if hints else PROVIDER,
                status_code=status,
            )
    error = errors.error_for_status(
        effective,
        detail,
        provider=hints.provider if hints else PROVIDER,
        label=hints.label if hints else "The Anthropic API",
        where=label,
        endpoint=errors.endpoint_of(exc.response),
        retry_after=parse_retry_after(headers),
        hints={
            errors.AuthenticationError: hints.rejected
            if hints
            else f"Check the key in the {key_variable} environment variable.",
            errors.PermissionDeniedError: hints.denied
            if hints
            else "The key is valid but may not use this model or feature "
            "(or the account has no credit).",
            errors.InvalidRequestError: _invalid_hint(effective),
        },
    )
    error.status_code = status
    return error


def _invalid_hint(status: int) -> str:
    if status == 404:
        return "Check the model id; `tether models` lists the known Claude models."
    if status == 413:
        return "The request is too large: send fewer or smaller images and documents."
    return ""


def _body_error(body: object) -> Mapping[str, Any] | None:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            return error
    return None


def _body_type(body: object) -> str | None:
    error = _body_error(body)
    kind = error.get("type") if error else None
    return kind if isinstance(kind, str) else None


def _body_message(body: object) -> str | None:
    error = _body_error(body)
    message = error.get("message") if error else None
    return message if isinstance(message, str) else None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _at(response: object) -> str:
    """`` at POST <url>`` for the request behind ``response``, or nothing."""
    endpoint = errors.endpoint_of(response)
    return f" at {endpoint}" if endpoint else ""
