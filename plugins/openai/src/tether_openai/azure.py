"""Azure OpenAI and Azure AI Foundry through the SDK's ``AsyncAzureOpenAI`` client.

The model string is ``azure/<deployment>``. Where requests go and how they are signed:

- endpoint: ``endpoint`` under ``[providers.azure]``, else ``AZURE_OPENAI_ENDPOINT``
  (``https://<resource>.openai.azure.com`` or a Foundry ``https://<resource>.services.ai.azure.com``);
  ``base_url`` instead gives the full base URL (it must end in ``/openai``);
- API version: ``api_version``, else ``OPENAI_API_VERSION``;
- credential: an API key (``api_key``, ``api_key_env``, else ``AZURE_OPENAI_API_KEY``), or
  with ``auth = "entra"`` a Microsoft Entra ID token from azure-identity's
  ``DefaultAzureCredential`` for ``token_scope``. A token provider passed in code
  (``OpenAIProvider(..., token_provider=...)``) wins over both.

The SDK calls the token provider before every request; azure-identity hands back its
cached token until it is close to expiry and then fetches a new one, so a long run keeps
working across token lifetimes. Nothing here imports the SDK or azure-identity until a
client is built.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import AuthenticationError, ConfigError
from tether.scrub import register_secret, scrub

if TYPE_CHECKING:
    from openai import AsyncAzureOpenAI

    from .client import Connection

__all__ = [
    "DEFAULT_SCOPE",
    "ENDPOINT_ENV",
    "KEY_ENV",
    "VERSION_ENV",
    "AzureSettings",
    "TokenProvider",
    "entra_token_provider",
    "make_azure_client",
]

ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
VERSION_ENV = "OPENAI_API_VERSION"
KEY_ENV = "AZURE_OPENAI_API_KEY"
DEFAULT_SCOPE = "https://cognitiveservices.azure.com/.default"
_ROLE = "Cognitive Services OpenAI User"

TokenProvider = Callable[[], "str | Awaitable[str]"]
"""A callable returning a bearer token for Azure OpenAI (or an awaitable of one); it is
called before every request, so it must cache and refresh by itself."""


@dataclass(frozen=True, slots=True)
class AzureSettings:
    """The Azure part of ``[providers.azure]``. ``repr`` shows no secret."""

    endpoint: str | None
    api_version: str | None
    entra: bool
    scope: str = DEFAULT_SCOPE
    token_provider: TokenProvider | None = None

    @classmethod
    def from_config(
        cls, config: ProviderConfig, token_provider: TokenProvider | None = None
    ) -> AzureSettings:
        extra = config.extra
        auth = extra.get("auth")
        if auth not in (None, "key", "entra"):
            raise ConfigError(
                f'[providers.azure] auth = {auth!r} is not valid. Use "key" (an API key) or '
                '"entra" (Microsoft Entra ID through azure-identity).'
            )
        return cls(
            endpoint=extra.get("endpoint") or os.environ.get(ENDPOINT_ENV) or None,
            api_version=extra.get("api_version") or os.environ.get(VERSION_ENV) or None,
            entra=token_provider is not None or auth == "entra",
            scope=str(extra.get("token_scope") or DEFAULT_SCOPE),
            token_provider=token_provider,
        )

    @property
    def credential(self) -> str:
        """Which credential requests carry, for messages."""
        if self.token_provider is not None:
            return "the Microsoft Entra ID token from the token provider given in code"
        return "the Microsoft Entra ID token" if self.entra else "the API key"

    def auth_hint(self, key_env: str) -> str:
        """What to fix when Azure answers 401."""
        if self.entra:
            return (
                f"Check that the signed-in identity belongs to the resource's tenant and that "
                f"the token scope ({self.scope}; token_scope in [providers.azure]) is right "
                "for the endpoint."
            )
        return (
            f"Set {key_env} to one of the resource's keys (Keys and Endpoint in the Azure "
            "portal) and check that the endpoint is that resource's."
        )

    def permission_hint(self) -> str:
        """What to fix when Azure answers 403."""
        if self.entra:
            return (
                f"The Microsoft Entra identity was accepted but may not call this resource: "
                f"give it the '{_ROLE}' role on the Azure OpenAI resource."
            )
        return "The key was accepted but may not use this deployment or feature."


def _require(value: str | None, what: str, key: str, variable: str) -> str:
    if value:
        return value
    raise ConfigError(
        f"No {what} for Azure OpenAI. Set {key} under [providers.azure] in tether.toml, or "
        f"the {variable} environment variable."
    )


def make_azure_client(connection: Connection, settings: AzureSettings) -> AsyncAzureOpenAI:
    """An ``AsyncAzureOpenAI`` client (SDK retries off: the runner retries, with events).

    Raises :class:`~tether.errors.ConfigError` naming the setting when the endpoint or API
    version is missing, and :class:`~tether.errors.AuthenticationError` when there is no
    credential."""
    kwargs: dict[str, Any] = {"max_retries": 0}
    if connection.base_url:
        kwargs["base_url"] = connection.base_url
    else:
        kwargs["azure_endpoint"] = _require(settings.endpoint, "endpoint", "endpoint", ENDPOINT_ENV)
    kwargs["api_version"] = _require(
        settings.api_version, "API version", "api_version", VERSION_ENV
    )
    if connection.timeout is not None:
        kwargs["timeout"] = connection.timeout
    credential: Any = None
    if settings.entra:
        tokens = settings.token_provider
        if tokens is None:
            credential, tokens = entra_token_provider(settings.scope)
        kwargs["azure_ad_token_provider"] = guarded(tokens)
    elif connection.api_key:
        kwargs["api_key"] = connection.api_key
    else:
        raise missing_credential(connection.key_env)
    from openai import AsyncAzureOpenAI

    if credential is None:
        return AsyncAzureOpenAI(**kwargs)

    class AzureClient(AsyncAzureOpenAI):
        """Closes the credential it made (its HTTP sessions) with the client."""

        async def close(self) -> None:
            try:
                await super().close()
            finally:
                credential.close()

    return AzureClient(**kwargs)


def missing_credential(key_env: str) -> AuthenticationError:
    return AuthenticationError(
        f"No credential for Azure OpenAI. Set the {key_env} environment variable (or "
        'api_key_env in [providers.azure]), or sign in with Microsoft Entra ID: auth = "entra" '
        "under [providers.azure] (needs `uv pip install './plugins/openai[azure]'`).",
        provider="azure",
    )


def entra_token_provider(scope: str = DEFAULT_SCOPE) -> tuple[Any, Callable[[], Awaitable[str]]]:
    """azure-identity's ``DefaultAzureCredential`` (environment variables, workload
    identity, managed identity, the Azure CLI, ...) and a token provider for ``scope``
    backed by it.

    The credential is synchronous; each call runs in a worker thread so the event loop
    never waits on a token request."""
    try:
        from azure.identity import DefaultAzureCredential, get_bearer_token_provider
    except ImportError as exc:
        raise ConfigError(
            'auth = "entra" in [providers.azure] needs azure-identity: '
            "`uv pip install './plugins/openai[azure]'`."
        ) from exc
    credential = DefaultAzureCredential()
    fetch = get_bearer_token_provider(credential, scope)

    async def token() -> str:
        return await asyncio.to_thread(fetch)

    return credential, token


def guarded(provider: TokenProvider) -> Callable[[], Awaitable[str]]:
    """``provider`` with its failures turned into an ``AuthenticationError`` that says the
    token could not be obtained (the SDK would pass them on untouched)."""

    async def token() -> str:
        try:
            value = provider()
            if inspect.isawaitable(value):
                value = await value
        except (AuthenticationError, ConfigError):
            raise
        except Exception as exc:
            detail = " ".join(str(exc).split())[:800]
            raise AuthenticationError(
                "Could not get a Microsoft Entra ID token for Azure OpenAI "
                f"({type(exc).__name__}{': ' + scrub(detail) if detail else ''}). Sign in with "
                "`az login`, or configure a managed identity or AZURE_CLIENT_ID / "
                "AZURE_TENANT_ID / AZURE_CLIENT_SECRET for DefaultAzureCredential.",
                provider="azure",
            ) from exc
        if not isinstance(value, str) or not value:
            raise AuthenticationError(
                "The Azure token provider returned no token (it must return a non-empty string).",
                provider="azure",
            )
        register_secret(value)
        return value

    return token
