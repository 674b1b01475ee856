"""The Anthropic provider: Claude models through the official SDK's Messages API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import ProviderError
from tether.provider import BaseProvider, ModelRequest, ProviderEvent
from tether.scrub import scrub

from .catalogue import DEFAULT_CAPABILITIES, MODELS
from .client import Credentials, make_client
from .errors import malformed_stream, translate
from .request import build_params
from .stream import assemble

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic, AsyncStream

__all__ = ["AnthropicProvider"]

log = logging.getLogger("tether_anthropic")


class AnthropicProvider(BaseProvider):
    """Claude over the Messages API, streamed.

    :param config: the ``[providers.anthropic]`` settings (key variable, base URL,
        timeout, model overrides). A missing key is reported by :meth:`validate_auth`
        and by the first request, never here.
    :param client: an ``AsyncAnthropic`` to use instead of building one (tests,
        benchmarks, custom transports). It is not closed by :meth:`aclose`.
    """

    name = "anthropic"
    models = MODELS
    default_capabilities = DEFAULT_CAPABILITIES

    def __init__(
        self, config: ProviderConfig | None = None, *, client: AsyncAnthropic | None = None
    ) -> None:
        self.config = config or ProviderConfig()
        super().__init__(model_overrides=self.config.models)
        self._credentials = Credentials(self.config)
        self._client = client
        self._owns_client = client is None

    def _sdk(self) -> AsyncAnthropic:
        if self._client is None:
            self._client = make_client(self.config, self._credentials)
        return self._client

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one response; see :class:`tether.provider.Provider`.

        Every failure, including one in the middle of the stream (an ``error`` event, a
        dropped connection), is raised as a :mod:`tether.errors` type.
        """
        origin = f"{self.name}/{request.model}"
        params = build_params(request, origin, self.capabilities(request.model))
        variable = self._credentials.variable
        client = self._sdk()
        try:
            events = await client.messages.create(**params, stream=True)
        except Exception as exc:
            error = translate(exc, variable)
            if error is None:
                raise
            raise error from exc
        try:
            async for event in assemble(events, origin):
                yield event
        except Exception as exc:
            error = translate(exc, variable) or malformed_stream(exc)
            if error is None:
                raise
            raise error from exc
        finally:
            await _close(events)

    async def validate_auth(self) -> None:
        """Raise ``AuthenticationError`` naming the key variable if no key is configured.

        Sends nothing (the CLI calls this before every run): a key the API rejects fails
        the first request, at once and without retries, with the same kind of error.
        :meth:`verify_key` asks the API.
        """
        self._sdk()

    async def verify_key(self) -> None:
        """Ask the API whether the key is accepted (one ``GET /v1/models``); raise
        ``AuthenticationError`` naming the key variable if it is not."""
        client = self._sdk()
        try:
            await client.models.list(limit=1)
        except Exception as exc:
            error = translate(exc, self._credentials.variable)
            if error is None:
                raise ProviderError(
                    f"The Anthropic models endpoint gave an unexpected answer: {exc!r}. "
                    "Check the base URL (ANTHROPIC_BASE_URL or `base_url`).",
                    provider=self.name,
                ) from exc
            raise error from exc

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.close()
        if self._owns_client:
            self._client = None

    def __repr__(self) -> str:
        return scrub(f"AnthropicProvider(base_url={self.config.base_url!r}, {self._credentials!r})")


async def _close(events: AsyncStream[Any]) -> None:
    """Release the response; a failure to close one that already failed is not news."""
    try:
        await events.close()
    except Exception as exc:
        log.debug("Closing the Anthropic stream failed: %s", exc)
