"""Credentials, endpoint and the SDK client for one profile.

The key comes from ``[providers.<name>] api_key``, else the variable named by
``api_key_env``, else the profile's own variable (``OPENAI_API_KEY``, ...). The base URL
comes from ``base_url`` in the config, else the profile's environment variable, else its
default; for OpenAI itself the SDK's ``OPENAI_BASE_URL`` convention applies. Nothing here
fails when the key is missing: that is reported at the first request (or by
``validate_auth``) with the variable to set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import AuthenticationError
from tether.scrub import scrub

from .azure import AzureSettings, TokenProvider, make_azure_client, missing_credential
from .errors import ErrorContext
from .profiles import Profile

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["Connection", "make_client"]

_OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class Connection:
    """Where and how to reach one profile's API. ``repr`` never shows the key."""

    profile: Profile
    key_env: str
    base_url: str | None
    timeout: float | None
    api_key: str | None = None
    azure: AzureSettings | None = None

    def __repr__(self) -> str:
        key = "set" if self.api_key else "missing"
        if self.azure is not None and self.azure.entra:
            key = "entra"
        return scrub(
            f"Connection(profile={self.profile.name!r}, base_url={self.endpoint!r}, key={key})"
        )

    @classmethod
    def from_config(
        cls, profile: Profile, config: ProviderConfig, token_provider: TokenProvider | None = None
    ) -> Connection:
        base_url = config.base_url
        if base_url is None and profile.base_url_env:
            base_url = os.environ.get(profile.base_url_env) or None
        if base_url is None:
            base_url = profile.base_url
        return cls(
            profile=profile,
            key_env=config.key_variable(profile.key_env),
            base_url=base_url,
            timeout=config.timeout,
            api_key=config.resolve_api_key(profile.key_env),
            azure=AzureSettings.from_config(config, token_provider) if profile.azure else None,
        )

    @property
    def endpoint(self) -> str:
        """The base URL requests go to, for messages."""
        if self.azure is not None:
            return self.base_url or self.azure.endpoint or "(no endpoint set)"
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_DEFAULT_URL

    @property
    def errors(self) -> ErrorContext:
        return ErrorContext(
            provider=self.profile.name,
            label=self.profile.label,
            key_env=self.key_env,
            base_url=self.endpoint,
            secret=self.api_key,
            auth_hint=self.azure.auth_hint(self.key_env) if self.azure else None,
            credential=self.azure.credential if self.azure and self.azure.entra else None,
            base_url_env=self.profile.base_url_env,
            local_server=not self.profile.key_required and not self.profile.azure,
            permission_hint=self.azure.permission_hint() if self.azure else None,
            not_found_hint="Check the deployment name (azure/<deployment>), the endpoint and "
            "the API version."
            if self.azure
            else None,
        )

    def require_key(self) -> str:
        """The key to send; raises ``AuthenticationError`` naming the variable when a
        required key is missing. Keyless profiles send a placeholder."""
        if self.api_key:
            return self.api_key
        if self.azure is not None:
            raise missing_credential(self.key_env)
        if self.profile.key_required:
            raise AuthenticationError(
                f"No API key for {self.profile.label}. Set the {self.key_env} environment variable "
                f"(or api_key_env in [providers.{self.profile.name}]).",
                provider=self.profile.name,
            )
        return self.profile.name


def make_client(connection: Connection, **options: Any) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client with SDK retries off (the runner retries, with events)."""
    if connection.azure is not None:
        return make_azure_client(connection, connection.azure)
    from openai import AsyncOpenAI

    kwargs: dict[str, Any] = {"api_key": connection.require_key(), "max_retries": 0, **options}
    if connection.base_url is not None:
        kwargs["base_url"] = connection.base_url
    if connection.timeout is not None:
        kwargs["timeout"] = connection.timeout
    return AsyncOpenAI(**kwargs)
