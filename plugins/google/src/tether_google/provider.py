"""The ``google`` provider: Gemini models through the google-genai SDK's streaming API.

``stream()`` converts the request (:mod:`.request`), calls
``client.aio.models.generate_content_stream`` and yields each text or thought delta the
moment the SDK parses its chunk, then one :class:`~tether.provider.ModelResponse`
assembled by :mod:`.stream`. Every failure leaves as a :mod:`tether.errors` type
(:mod:`.errors`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import InvalidRequestError, ProviderError
from tether.provider import BaseProvider, ModelRequest, ProviderEvent

from .catalogue import DEFAULT_CAPABILITIES, MODELS
from .client import DEFAULT_TIMEOUT, build_client, missing_key_error, resolve_api_key
from .errors import translate_error
from .stream import StreamAssembler

if TYPE_CHECKING:
    import httpx
    from google import genai

__all__ = ["GoogleProvider"]


class GoogleProvider(BaseProvider):
    """Gemini models on the Gemini Developer API.

    :param config: the ``[providers.google]`` settings (key variable, ``base_url``,
        ``timeout`` in seconds, model overrides, passthrough generation settings).
    :param http_client: an ``httpx.AsyncClient`` to send requests through (for proxies,
        custom transports or tests). The provider closes only a client it created.

    Construction never fails for a missing key, so the catalogue can always be listed;
    :meth:`validate_auth` and the first request raise ``AuthenticationError`` instead.
    """

    name = "google"
    models = MODELS
    default_capabilities = DEFAULT_CAPABILITIES
    shares_settings = False
    """Whether the provider's table is shared with other model families (a platform's
    ``[providers.vertex]``): keys that are not Gemini settings are theirs, not typos (the
    configuration check knows every family's keys), and are left out of requests."""

    def __init__(
        self, config: ProviderConfig | None = None, *, http_client: httpx.AsyncClient | None = None
    ) -> None:
        self._config = config if config is not None else ProviderConfig()
        super().__init__(model_overrides=self._config.models)
        self._api_key = resolve_api_key(self._config)
        self._timeout = self._config.timeout or DEFAULT_TIMEOUT
        self._http_client = http_client
        self._owns_http_client = http_client is None
        self._client: genai.Client | None = None

    def _sdk(self) -> genai.Client:
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def _http(self) -> httpx.AsyncClient:
        """The HTTP client requests go through (created on first use)."""
        if self._http_client is None:
            import httpx

            self._http_client = httpx.AsyncClient(timeout=self._timeout)
        return self._http_client

    def _make_client(self) -> genai.Client:
        if not self._api_key:
            raise missing_key_error(self._config)
        return build_client(
            self._api_key,
            base_url=self._config.base_url,
            timeout=self._timeout,
            http_client=self._http(),
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        from .request import PASSTHROUGH_SETTINGS, build_config, build_contents

        model_string = f"{self.name}/{request.model}"
        client = self._sdk()
        if self.shares_settings and not request.settings.keys() <= PASSTHROUGH_SETTINGS:
            own = {k: v for k, v in request.settings.items() if k in PASSTHROUGH_SETTINGS}
            request = dataclasses.replace(request, settings=own)
        try:
            contents, extra_system = build_contents(request, self.name)
            config = build_config(request, extra_system)
        except ValueError as exc:
            raise InvalidRequestError(
                f"The history cannot be sent to Gemini: {exc}. Check the message blocks "
                f"(e.g. image data must be base64).",
                provider=self.name,
            ) from exc
        assembler = StreamAssembler(model_string)
        add_part = assembler.add_part
        chunks: Any = None
        try:
            chunks = await client.aio.models.generate_content_stream(
                model=request.model, contents=contents, config=config
            )
            async for chunk in chunks:
                candidates = chunk.candidates
                candidate = candidates[0] if candidates else None
                if candidate is not None:
                    content = candidate.content
                    if content is not None and content.parts:
                        for part in content.parts:
                            delta = add_part(part)
                            if delta is not None:
                                yield delta
                assembler.add_chunk(chunk, candidate)
        except Exception as exc:
            raise self._translate(exc, request.model) from exc
        finally:
            if chunks is not None:
                with contextlib.suppress(Exception):
                    await chunks.aclose()
        yield assembler.finish(model_string)

    async def validate_auth(self) -> None:
        """Raise ``AuthenticationError`` naming the key variables when no key is set.

        Sends nothing (the CLI calls this before every run): a key the API rejects fails
        the first request at once, without retries, with the same error. :meth:`verify_key`
        asks the API.
        """
        self._sdk()

    async def verify_key(self) -> None:
        """Ask the API whether the key is accepted (one ``GET models`` listing a single
        model); raise ``AuthenticationError`` naming the key variables if it is not."""
        client = self._sdk()
        try:
            await client.aio.models.list(config={"page_size": 1})
        except Exception as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: BaseException, model: str | None = None) -> ProviderError:
        return translate_error(exc, self._config, model)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        http_client = self._http_client
        if http_client is not None and self._owns_http_client:
            self._http_client = None
            await http_client.aclose()
