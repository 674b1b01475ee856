"""Translation of openai SDK (and transport) exceptions into :mod:`tether.errors`.

Every exception that leaves this plugin is a :class:`~tether.errors.TetherError`; the
original is kept as ``__cause__``. Messages say what went wrong and what to do, and never
contain the API key (OpenAI echoes a masked key in some 401 messages; it is scrubbed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    RefusalError,
    ServerError,
    endpoint_of,
    error_for_status,
)
from tether.retry import parse_retry_after as retry_after

__all__ = ["ErrorContext", "from_stream_error", "is_context_overflow", "retry_after", "translate"]

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|"
    r"exceeds? the (?:available )?context|context size|prompt is too long|too many tokens|"
    r"input is too long",
    re.IGNORECASE,
)
_UNSUPPORTED = re.compile(
    r"\bunsupported\b|\bnot (?:yet )?supported\b|\bnot implemented\b|\bdoes not support\b|"
    r"requires --jinja",
    re.IGNORECASE,
)
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"})
_KEYLIKE = re.compile(r"\b(?:sk|rk)-[A-Za-z0-9_\-*.]{4,}")
_REFUSAL_CODES = frozenset(
    {
        "bio_policy",
        "misalignment_policy_violation",
        "image_content_policy_violation",
        "content_filter",
    }
)


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """What an error message needs to name: the provider, its label, the key variable,
    the endpoint, and the secret to scrub."""

    provider: str
    label: str
    key_env: str
    base_url: str
    secret: str | None = None
    auth_hint: str | None = None
    permission_hint: str | None = None
    not_found_hint: str | None = None
    credential: str | None = None
    """What a 401 rejected when it is not an API key (``"the Microsoft Entra ID token"``)."""
    base_url_env: str | None = None
    """The variable that sets the base URL, named when the server cannot be reached."""
    local_server: bool = False
    """A server the user runs themselves (llama.cpp, Ollama, ...): a refused connection
    to it on this machine fails at once instead of being retried."""

    def clean(self, text: str) -> str:
        if self.secret:
            text = text.replace(self.secret, "***")
        return _KEYLIKE.sub("***", text)


def is_context_overflow(code: str | None, message: str) -> bool:
    return code == "context_length_exceeded" or bool(_OVERFLOW.search(message))


def _fields(body: object) -> tuple[str | None, str | None, str]:
    """(code, type, message) of an OpenAI error body (``{"error": {...}}`` or the inner dict)."""
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if not isinstance(body, Mapping):
        return None, None, str(body) if body else ""
    code = body.get("code")
    kind = body.get("type")
    message = body.get("message")
    return (
        str(code) if code is not None else None,
        str(kind) if kind is not None else None,
        str(message) if message else "",
    )


def from_stream_error(
    code: str | None, message: str, ctx: ErrorContext, kind: str | None = None
) -> ProviderError:
    """The tether error for an error reported inside a 200 stream (a Chat Completions
    ``{"error": ...}`` chunk, a Responses ``error`` event or ``response.failed``)."""
    text = ctx.clean(message or "no message")
    name = ctx.provider
    where = f"{ctx.label} reported an error mid-stream"
    tags = f"{code or ''} {kind or ''}".lower()
    if is_context_overflow(code, text):
        return ContextOverflowError(
            f"{where}: the prompt is too long for the model: {text}", provider=name
        )
    if "overload" in tags or "overload" in text.lower():
        return OverloadedError(
            f"{where}: the service is overloaded: {text}. Retrying later helps.", provider=name
        )
    if "rate_limit" in tags:
        return RateLimitError(f"{where}: rate limited: {text}", provider=name, status_code=None)
    if code in _REFUSAL_CODES:
        return RefusalError(f"{where}: the request was refused ({code}): {text}", provider=name)
    if "invalid_request" in tags or (code is not None and code.startswith(("invalid_", "image_"))):
        return InvalidRequestError(
            f"{where}: the request was rejected ({code or kind}): {text}", provider=name
        )
    return ServerError(f"{where} ({code or kind or 'server_error'}): {text}", provider=name)


def translate(exc: BaseException, ctx: ErrorContext) -> ProviderError:
    """The tether error for an exception raised by the openai SDK or its HTTP stack (or
    by the SDK choking on a response that is not what the API sends)."""
    import openai

    name = ctx.provider
    if isinstance(exc, openai.APITimeoutError) or _is_transport(exc, "TimeoutException"):
        return ProviderTimeoutError(
            f"{ctx.label} did not answer in time ({ctx.base_url}). Raise `timeout` in "
            f"[providers.{name}] if responses are legitimately slow.",
            provider=name,
        )
    if isinstance(exc, openai.APIConnectionError) or _is_transport(exc, "TransportError"):
        cause = exc.__cause__ or exc
        if ctx.local_server and _refused_locally(cause, ctx.base_url):
            return _local_server_down(cause, ctx)
        return ProviderConnectionError(
            f"The connection to {ctx.label} ({ctx.base_url}) failed or dropped: "
            f"{ctx.clean(str(cause) or type(cause).__name__)}. Check that the server is reachable.",
            provider=name,
        )
    if isinstance(exc, openai.APIStatusError):
        return _from_status(exc, ctx)
    if isinstance(exc, openai.APIError):
        code, kind, message = _fields(exc.body)
        return from_stream_error(code, message or str(exc), ctx, kind)
    return ProviderError(
        f"{ctx.label} ({ctx.base_url}) sent something the client could not handle "
        f"({type(exc).__name__}: {ctx.clean(str(exc))}). Check that the base URL points at an "
        "OpenAI-compatible API.",
        provider=name,
    )


def _from_status(exc: Any, ctx: ErrorContext) -> ProviderError:
    status: int = exc.status_code
    code, kind, message = _fields(exc.body)
    text = ctx.clean(message or str(exc))
    name = ctx.provider
    if status == 429 and code == "insufficient_quota":
        quota = RateLimitError(
            f"{ctx.label} says the account is out of quota (HTTP 429: {text}). Add credit or "
            "raise the limit; retrying will not help.",
            provider=name,
        )
        quota.retryable = False
        return quota
    if status in (400, 413, 422) and is_context_overflow(code, text):
        return ContextOverflowError(
            f"The prompt is too long for the model (HTTP {status}){_at(exc.response)}: {text}",
            provider=name,
            status_code=status,
        )
    # Quirks of OpenAI-compatible servers: a conflict is transient, "overloaded" may
    # come with any 5xx.
    effective = 500 if status == 409 else status
    if effective >= 500 and "overload" in text.lower():
        effective = 503
    headers = exc.response.headers if exc.response is not None else None
    tag = code or kind
    if status == 401 and ctx.credential:
        return AuthenticationError(
            f"{ctx.label} rejected {ctx.credential} (HTTP 401{', ' + tag if tag else ''})"
            f"{_at(exc.response)}: {text.rstrip('.')}. {ctx.auth_hint or ''}".rstrip(),
            provider=name,
            status_code=status,
        )
    if effective >= 500 and _UNSUPPORTED.search(text):
        unsupported = ServerError(
            f"{ctx.label} does not support something this request uses "
            f"(HTTP {status}{', ' + tag if tag else ''}){_at(exc.response)}: {text}. "
            "Retrying will not help: leave the feature out (or configure the model so it "
            "is not sent) or start the server with it enabled.",
            provider=name,
            status_code=status,
        )
        unsupported.retryable = False
        return unsupported
    error = error_for_status(
        effective,
        text,
        provider=name,
        label=ctx.label,
        where=f"HTTP {status}, {tag}" if tag else f"HTTP {status}",
        endpoint=endpoint_of(exc.response),
        retry_after=retry_after(headers),
        hints={
            AuthenticationError: ctx.auth_hint or f"Set {ctx.key_env} to a valid key.",
            PermissionDeniedError: ctx.permission_hint
            or "The key works but may not use this model or feature; "
            "check the project's permissions.",
            InvalidRequestError: (
                ctx.not_found_hint or f"Check the model name and the base URL ({ctx.base_url})."
            )
            if status == 404
            else "",
        },
    )
    error.status_code = status
    return error


def _refused_locally(cause: BaseException, base_url: str) -> bool:
    """Whether a connection to a server on this machine was refused (nothing listens):
    retrying in seconds will not start it."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    if host not in _LOOPBACK_HOSTS and not host.startswith("127."):
        return False
    seen: BaseException | None = cause
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError) or _is_transport(seen, "ConnectError"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _local_server_down(cause: BaseException, ctx: ErrorContext) -> ProviderConnectionError:
    where = f"base_url in [providers.{ctx.provider}]"
    if ctx.base_url_env:
        where += f" or {ctx.base_url_env}"
    error = ProviderConnectionError(
        f"Nothing answers at {ctx.base_url}: the connection to {ctx.label} was refused "
        f"({ctx.clean(str(cause) or type(cause).__name__)}). Start the server, or point "
        f"{where} at the address it listens on.",
        provider=ctx.provider,
    )
    error.retryable = False
    return error


def _is_transport(exc: BaseException, base: str) -> bool:
    """Whether ``exc`` is an httpx/httpx2 exception derived from ``base``."""
    for cls in type(exc).__mro__:
        if cls.__name__ == base and cls.__module__.split(".")[0] in ("httpx", "httpx2", "httpcore"):
            return True
    return False


def _at(response: object) -> str:
    """`` at POST <url>`` for the request behind ``response``, or nothing."""
    endpoint = endpoint_of(response)
    return f" at {endpoint}" if endpoint else ""
