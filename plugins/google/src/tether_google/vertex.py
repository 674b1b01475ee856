"""Gemini on Vertex AI: the ``gemini-`` family of the ``vertex`` platform.

The google-genai SDK in Vertex mode (``vertexai=True``) with the Application Default
Credentials of :mod:`tether_google_auth`: it sends ``streamGenerateContent`` to
``https://<location>-aiplatform.googleapis.com/v1beta1/projects/<project>/locations/
<location>/publishers/google/models/<model>``, and checks the credentials before every
request, refreshing the access token when it is near expiry. Streaming, history and
errors are those of :class:`~tether_google.provider.GoogleProvider`; only credentials,
the endpoint, the catalogue (Vertex prices) and the advice in errors differ.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from tether.errors import ProviderError
from tether.provider import ModelRequest, ProviderEvent
from tether_google_auth import (
    VertexAccount,
    denied_hint,
    load_account,
    rejected_hint,
    translate_auth_error,
)

from .catalogue import VERTEX_MODELS
from .errors import Api, translate_error
from .provider import GoogleProvider

if TYPE_CHECKING:
    from google import genai

__all__ = ["INSTALL", "VertexGeminiProvider"]

INSTALL = "tether-google"
"""What brings google-auth, for the error when it is missing."""


class VertexGeminiProvider(GoogleProvider):
    """Gemini models on Vertex AI, as ``vertex/gemini-*``.

    :param config: the ``[providers.vertex]`` settings: ``project``, ``location``,
        ``base_url`` (a private endpoint or a proxy), ``timeout``, model overrides and
        the Gemini generation settings of ``[providers.google]``.
    :param http_client: as for :class:`~tether_google.provider.GoogleProvider`.

    Construction sends nothing and never fails; :meth:`validate_auth` and the first
    request raise ``AuthenticationError`` when no credentials or no project are found.
    """

    name = "vertex"
    models = VERTEX_MODELS
    shares_settings = True

    _account: VertexAccount | None = None

    async def _load_account(self) -> None:
        """Find the credentials off the event loop: on a Google Cloud machine, or with
        none at all, google-auth asks the metadata server (with its own short timeouts)."""
        if self._account is None:
            self._account = await asyncio.to_thread(load_account, self._config, install=INSTALL)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        await self._load_account()
        async for event in super().stream(request):
            yield event

    async def validate_auth(self) -> None:
        await self._load_account()
        await super().validate_auth()

    def _make_client(self) -> genai.Client:
        from google import genai
        from google.genai import types

        account = self._account = self._account or load_account(self._config, install=INSTALL)
        options = types.HttpOptions(
            base_url=self._config.base_url or None,
            timeout=max(int(self._timeout * 1000), 1),
            retry_options=types.HttpRetryOptions(attempts=1),
            httpx_async_client=self._http(),
        )
        return genai.Client(
            vertexai=True,
            credentials=account.credentials,
            project=account.project,
            location=account.location,
            http_options=options,
        )

    def _translate(self, exc: BaseException, model: str | None = None) -> ProviderError:
        auth = translate_auth_error(exc)
        if auth is not None:
            return auth
        api = Api(
            provider=self.name,
            label="Vertex AI",
            auth_hint=rejected_hint(self._account),
            permission_hint=denied_hint(self._account),
        )
        return translate_error(exc, self._config, model, api)
