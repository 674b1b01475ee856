"""The SDK client and its credentials.

The client is created on first use, so a provider can be built (and ``tether models``
can list the catalogue) without a key. The SDK never retries (``max_retries=0``): the
runner retries, announcing each attempt with a ``Retry`` event.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tether.config import ProviderConfig

from .errors import missing_key_error

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["DEFAULT_KEY_VARIABLE", "DEFAULT_TIMEOUT", "Credentials", "make_client"]

DEFAULT_KEY_VARIABLE = "ANTHROPIC_API_KEY"
DEFAULT_TIMEOUT = 600.0


class Credentials:
    """Where the key comes from. ``repr`` never shows the key."""

    __slots__ = ("_api_key", "_auth_token", "variable")

    def __init__(self, config: ProviderConfig) -> None:
        self.variable = config.key_variable(DEFAULT_KEY_VARIABLE)
        self._api_key = config.resolve_api_key(DEFAULT_KEY_VARIABLE)
        # Gateways that take a bearer token use the SDK's own ANTHROPIC_AUTH_TOKEN.
        self._auth_token = None if self._api_key else os.environ.get("ANTHROPIC_AUTH_TOKEN") or None

    @property
    def present(self) -> bool:
        return bool(self._api_key or self._auth_token)

    def __repr__(self) -> str:
        state = "set" if self.present else "missing"
        return f"Credentials(variable={self.variable!r}, key={state})"


def make_client(config: ProviderConfig, credentials: Credentials) -> AsyncAnthropic:
    """An ``AsyncAnthropic`` for ``config``; raises ``AuthenticationError`` naming the
    variable to set when there is no key. ``config.base_url`` wins over the SDK's own
    ``ANTHROPIC_BASE_URL``, which keeps working when the config sets none."""
    if not credentials.present:
        raise missing_key_error(credentials.variable)
    from anthropic import AsyncAnthropic

    timeout = config.timeout if config.timeout is not None else DEFAULT_TIMEOUT
    if credentials._api_key:
        return AsyncAnthropic(
            api_key=credentials._api_key, base_url=config.base_url, timeout=timeout, max_retries=0
        )
    return AsyncAnthropic(
        auth_token=credentials._auth_token, base_url=config.base_url, timeout=timeout, max_retries=0
    )
