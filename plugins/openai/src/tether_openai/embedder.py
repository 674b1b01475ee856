"""The ``openai`` embedder for the knowledge base (``text-embedding-3-small`` by default).

::

    [knowledge]
    embedder = "openai"
    settings = { model = "text-embedding-3-small", dimensions = 512 }

``dimensions`` shortens the vectors (``text-embedding-3-*`` models only); the embedder's
``name`` includes it, so an index built at one size is never queried at another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import KnowledgeBackendError, TetherError

from .client import Connection, make_client
from .errors import translate
from .profiles import OPENAI

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIEmbedder"]

_NATIVE_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """Embeds texts with OpenAI's embeddings endpoint; implements tether's ``Embedder``.

    :param model: the embedding model id.
    :param dimensions: vector length to ask for (``None``: the model's native length).
    :param batch_size: texts per request (the API accepts up to 2048).
    :param api_key, api_key_env, base_url, timeout: as in ``[providers.openai]``.
    """

    def __init__(
        self,
        *,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
        batch_size: int = 256,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        client: AsyncOpenAI | None = None,
    ) -> None:
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be a positive integer, got {dimensions}.")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}.")
        self.model = model
        self.dimensions: int | None = dimensions or _NATIVE_DIMENSIONS.get(model)
        self._requested_dimensions = dimensions
        self.name = f"openai/{model}" + (f"@{dimensions}" if dimensions else "")
        self._batch_size = batch_size
        config = ProviderConfig.model_validate(
            {
                "api_key": api_key,
                "api_key_env": api_key_env,
                "base_url": base_url,
                "timeout": timeout,
            }
        )
        self._connection = Connection.from_config(OPENAI, config)
        self._client = client

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, dimensions={self.dimensions})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises ``KnowledgeBackendError`` on any failure."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(await self._batch(list(texts[start : start + self._batch_size])))
        return vectors

    async def embed_query(self, text: str) -> list[float]:
        return (await self.embed([text]))[0]

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        try:
            if self._client is None:
                self._client = make_client(self._connection)
            options: dict[str, Any] = {
                "model": self.model,
                "input": texts,
                "encoding_format": "float",
            }
            if self._requested_dimensions is not None:
                options["dimensions"] = self._requested_dimensions
            response = await self._client.embeddings.create(**options)
        except TetherError as exc:
            raise KnowledgeBackendError(f"OpenAI embeddings ({self.model}): {exc}") from exc
        except Exception as exc:
            error = translate(exc, self._connection.errors)
            raise KnowledgeBackendError(
                f"OpenAI embeddings ({self.model}) failed: {error}"
            ) from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise KnowledgeBackendError(
                f"OpenAI embeddings ({self.model}) returned {len(data)} vectors for {len(texts)} texts."
            )
        vectors = [list(item.embedding) for item in data]
        if vectors and self.dimensions is None:
            self.dimensions = len(vectors[0])
        return vectors
