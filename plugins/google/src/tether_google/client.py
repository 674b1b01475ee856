"""Credentials and the google-genai client: where the key comes from and how the SDK is set up.

The key is read from the explicit ``api_key`` of ``[providers.google]``, else from the
variable named by ``api_key_env``, else from ``GEMINI_API_KEY`` and then ``GOOGLE_API_KEY``
(the two variables Google documents). It is handed to the SDK and nowhere else: it never
appears in logs, errors or sessions.

The SDK is configured so that the runner owns retries (one attempt per request, no SDK
backoff) and so that it always talks through an ``httpx.AsyncClient`` owned by the provider
(the SDK would otherwise switch to aiohttp when that happens to be installed, with another
exception family). ``base_url`` from configuration wins; without it the SDK's own
``GOOGLE_GEMINI_BASE_URL`` convention keeps working.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tether.config import ProviderConfig
from tether.errors import AuthenticationError

if TYPE_CHECKING:
    import httpx
    from google import genai

__all__ = [
    "DEFAULT_TIMEOUT",
    "KEY_VARIABLES",
    "build_client",
    "key_hint",
    "missing_key_error",
    "resolve_api_key",
]

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
"""Environment variables searched for the key, in order, when the config names none."""

DEFAULT_TIMEOUT = 600.0
"""Seconds to wait for each read of a response when ``timeout`` is not configured."""


def resolve_api_key(config: ProviderConfig) -> str | None:
    """The API key per the module docstring, or ``None`` when none is set."""
    if config.api_key is not None or config.api_key_env:
        return config.resolve_api_key(KEY_VARIABLES[0])
    for variable in KEY_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    return None


def key_hint(config: ProviderConfig) -> str:
    """Which variable to set, for error messages (never the key itself)."""
    if config.api_key_env:
        return f"Set the {config.api_key_env} environment variable (named by [providers.google] api_key_env)"
    return (
        f"Set {KEY_VARIABLES[0]} (or {KEY_VARIABLES[1]}) to a Gemini API key from Google AI Studio"
    )


def missing_key_error(config: ProviderConfig) -> AuthenticationError:
    return AuthenticationError(
        f"No Gemini API key found. {key_hint(config)}, or set api_key_env in [providers.google].",
        provider="google",
    )


def build_client(
    api_key: str,
    *,
    base_url: str | None,
    timeout: float,
    http_client: httpx.AsyncClient,
) -> genai.Client:
    """A google-genai client that makes exactly one attempt per request through ``http_client``."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=base_url or None,
        timeout=max(int(timeout * 1000), 1),
        retry_options=types.HttpRetryOptions(attempts=1),
        httpx_async_client=http_client,
    )
    return genai.Client(api_key=api_key, vertexai=False, http_options=options)
