"""Claude on Vertex AI: the ``claude-`` family of the ``vertex`` platform.

The SDK's ``AsyncAnthropicVertex`` with the Application Default Credentials of
:mod:`tether_google_auth`: it posts the Messages API body (with ``anthropic_version``, the
model moved into the URL) to
``https://<location>-aiplatform.googleapis.com/v1/projects/<project>/locations/<location>/
publishers/anthropic/models/<model>:streamRawPredict`` (``aiplatform.googleapis.com`` for
the ``global`` location) and, before every request, refreshes the access token when the
credentials say it is expired (google-auth says so a few minutes early). Requests, streams
and errors are those of :class:`~tether_anthropic.provider.AnthropicProvider`; the
credentials, the endpoint, the catalogue and the advice in errors differ.

Model ids are Vertex's: ``claude-sonnet-4-5@20250929`` (the dated ids Vertex uses for
the 4.5 models), ``claude-opus-4-6``. Prices are Anthropic's list prices, which Vertex AI
charges on the ``global`` endpoint; regional and multi-region endpoints cost 10% more for
Claude 4.5 and later models.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import ProviderError
from tether.provider import ModelInfo, ModelRequest, ProviderEvent
from tether_google_auth import (
    DEFAULT_LOCATION,
    LOCATION_VARIABLES,
    VertexAccount,
    denied_hint,
    load_account,
    rejected_hint,
    setting,
    translate_auth_error,
)

from .catalogue import MODELS
from .errors import Hints, translate
from .provider import AnthropicProvider

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["INSTALL", "VERTEX_IDS", "VertexClaudeProvider", "vertex_models"]

INSTALL = "tether-anthropic[vertex]"
"""What brings google-auth and tether-google-auth, for the error when they are missing."""

VERTEX_IDS = {
    "claude-opus-4-5": "claude-opus-4-5@20251101",
    "claude-sonnet-4-5": "claude-sonnet-4-5@20250929",
    "claude-haiku-4-5": "claude-haiku-4-5@20251001",
}
"""Anthropic model id → Vertex AI model id, where they differ."""

REGIONAL_PREMIUM = 1.1
"""Regional and multi-region endpoints cost this much more than ``global``."""


def vertex_models(*, regional: bool) -> tuple[ModelInfo, ...]:
    """The Claude catalogue under Vertex ids, at the prices of the endpoint kind."""
    models = []
    for info in MODELS:
        capabilities = info.capabilities
        if regional and capabilities.pricing is not None:
            pricing = capabilities.pricing
            capabilities = replace(
                capabilities,
                pricing=replace(
                    pricing,
                    input=round(pricing.input * REGIONAL_PREMIUM, 6),
                    output=round(pricing.output * REGIONAL_PREMIUM, 6),
                    cache_read=_premium(pricing.cache_read),
                    cache_write=_premium(pricing.cache_write),
                ),
            )
        models.append(
            ModelInfo(
                VERTEX_IDS.get(info.id, info.id),
                capabilities,
                description=f"{info.description} on Vertex AI",
            )
        )
    return tuple(models)


def _api_root(base_url: str | None) -> str | None:
    """The SDK's base URL (``.../v1``) for the platform's ``base_url`` (the root)."""
    return f"{base_url.rstrip('/')}/v1" if base_url else None


def _premium(price: float | None) -> float | None:
    return None if price is None else round(price * REGIONAL_PREMIUM, 6)


class VertexClaudeProvider(AnthropicProvider):
    """Claude models on Vertex AI, as ``vertex/claude-*``.

    :param config: the ``[providers.vertex]`` settings: ``project``, ``location``,
        ``base_url`` (a private endpoint or a proxy: the root that ``/v1`` follows, as
        for Gemini, whose SDK appends ``/v1beta1``), ``timeout``,
        model overrides and the Claude settings of ``[providers.anthropic]``.
    :param client: an ``AsyncAnthropicVertex`` to use instead of building one.

    Construction sends nothing and never fails; :meth:`validate_auth` and the first
    request raise ``AuthenticationError`` when no credentials or no project are found.
    """

    name = "vertex"

    def __init__(self, config: ProviderConfig | None = None, *, client: Any = None) -> None:
        super().__init__(config, client=client)
        location = setting(self.config, "location", LOCATION_VARIABLES) or DEFAULT_LOCATION
        self.models = vertex_models(regional=location != "global")
        self._account: VertexAccount | None = None

    def _sdk(self) -> AsyncAnthropic:
        if self._client is None:
            from anthropic import AsyncAnthropicVertex

            account = self._account = self._account or load_account(self.config, install=INSTALL)
            timeout = self.config.timeout if self.config.timeout is not None else 600.0
            self._client = AsyncAnthropicVertex(  # type: ignore[assignment]
                region=account.location,
                project_id=account.project,
                credentials=account.credentials,
                base_url=_api_root(self.config.base_url),
                timeout=timeout,
                max_retries=0,
            )
        return self._client  # type: ignore[return-value]

    async def _load_account(self) -> None:
        """Find the credentials off the event loop: on a Google Cloud machine, or with
        none at all, google-auth asks the metadata server (with its own short timeouts)."""
        if self._account is None and self._client is None:
            self._account = await asyncio.to_thread(load_account, self.config, install=INSTALL)

    async def validate_auth(self) -> None:
        await self._load_account()
        await super().validate_auth()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        await self._load_account()
        try:
            async for event in super().stream(request):
                yield event
        except Exception as exc:
            error = self._translate(exc)
            if error is exc:
                raise
            raise error from (exc.__cause__ or exc)

    def _translate(self, exc: BaseException) -> BaseException:
        """Vertex's advice for an error the Anthropic translation made (or left alone)."""
        if isinstance(exc, ProviderError) and exc.provider == self.name:
            return exc
        cause = exc.__cause__ if isinstance(exc, ProviderError) and exc.__cause__ else exc
        auth = translate_auth_error(cause)
        if auth is not None:
            return auth
        hints = Hints(
            provider=self.name,
            label="Vertex AI",
            rejected=rejected_hint(self._account),
            denied=denied_hint(self._account),
        )
        return translate(cause, self._credentials.variable, hints=hints) or exc

    async def verify_key(self) -> None:
        """Refresh the access token now (asks Google's token endpoint, not Vertex AI):
        raise ``AuthenticationError`` naming the credentials if they are refused."""
        from google.auth.transport.requests import Request

        self._sdk()
        assert self._account is not None
        try:
            await asyncio.to_thread(self._account.credentials.refresh, Request())
        except Exception as exc:
            raise (translate_auth_error(exc) or exc) from exc

    def __repr__(self) -> str:
        return f"VertexClaudeProvider(base_url={self.config.base_url!r}, {self._account!r})"
