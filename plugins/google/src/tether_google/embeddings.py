"""The ``google`` embedder: Gemini embedding models for the knowledge base.

::

    [knowledge]
    embedder = "google"
    settings = { model = "gemini-embedding-001", dimensions = 768 }

Documents are embedded with task type ``RETRIEVAL_DOCUMENT`` and queries with
``RETRIEVAL_QUERY``, as Google recommends for search. Texts are sent in batches of
``batch_size`` (the API accepts at most 100 per request). The key comes from the same
places as the provider's (``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``, or ``api_key_env``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import KnowledgeBackendError

from .client import DEFAULT_TIMEOUT, build_client, key_hint, resolve_api_key
from .errors import translate_error

if TYPE_CHECKING:
    import httpx
    from google import genai

__all__ = ["KNOWN_DIMENSIONS", "GoogleEmbedder"]

KNOWN_DIMENSIONS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
"""Default vector length of each known model (``dimensions`` may shorten Gemini's)."""

MAX_BATCH = 100


class GoogleEmbedder:
    """Text → vector with a Gemini embedding model. See the module docstring.

    :param model: ``gemini-embedding-001`` (default) or ``text-embedding-004``.
    :param dimensions: output dimensionality (``gemini-embedding-001``: 128 to 3072;
        768, 1536 or 3072 recommended). Defaults to the model's full size.
    :param batch_size: texts per request, 1 to 100.
    :param api_key: the key itself, for programmatic use (keep keys out of config files).
    :param api_key_env, base_url, timeout: as in ``[providers.google]``.

    A missing key is reported by the first call, as a ``KnowledgeBackendError`` naming the
    variable to set.
    """

    def __init__(
        self,
        model: str = "gemini-embedding-001",
        dimensions: int | None = None,
        *,
        batch_size: int = MAX_BATCH,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}, got {batch_size}.")
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be positive, got {dimensions}.")
        self.model = model
        self.name = f"google/{model}" + (f"@{dimensions}" if dimensions else "")
        self.dimensions: int | None = dimensions or KNOWN_DIMENSIONS.get(model)
        self._output_dimensionality = dimensions
        self._batch_size = batch_size
        self._config = ProviderConfig.model_validate(
            {
                "api_key": api_key,
                "api_key_env": api_key_env,
                "base_url": base_url,
                "timeout": timeout,
            }
        )
        self._http_client = http_client
        self._owns_http_client = http_client is None
        self._client: genai.Client | None = None

    def _sdk(self) -> genai.Client:
        if self._client is None:
            api_key = resolve_api_key(self._config)
            if not api_key:
                raise KnowledgeBackendError(
                    f"The google embedder has no API key. {key_hint(self._config)}, or "
                    f"configure another embedder in [knowledge]."
                )
            timeout = self._config.timeout or DEFAULT_TIMEOUT
            if self._http_client is None:
                import httpx

                self._http_client = httpx.AsyncClient(timeout=timeout)
            self._client = build_client(
                api_key,
                base_url=self._config.base_url,
                timeout=timeout,
                http_client=self._http_client,
            )
        return self._client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (``RETRIEVAL_DOCUMENT``)."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            vectors.extend(await self._embed_batch(batch, "RETRIEVAL_DOCUMENT"))
        return vectors

    async def embed_query(self, text: str) -> list[float]:
        """The vector of a search query (``RETRIEVAL_QUERY``)."""
        return (await self._embed_batch([text], "RETRIEVAL_QUERY"))[0]

    async def _embed_batch(self, texts: list[str], task_type: str) -> list[list[float]]:
        from google.genai import types

        client = self._sdk()
        config = types.EmbedContentConfig(
            task_type=task_type, output_dimensionality=self._output_dimensionality
        )
        try:
            response: Any = await client.aio.models.embed_content(
                model=self.model, contents=texts, config=config
            )
        except Exception as exc:
            error = translate_error(exc, self._config, self.model)
            raise KnowledgeBackendError(f"Embedding with {self.name} failed: {error}") from exc
        embeddings = response.embeddings or []
        vectors = [list(e.values or []) for e in embeddings]
        if len(vectors) != len(texts) or any(not v for v in vectors):
            raise KnowledgeBackendError(
                f"{self.name} returned {len(vectors)} vector(s) for {len(texts)} text(s); "
                f"expected one non-empty vector per text."
            )
        if self.dimensions is None:
            self.dimensions = len(vectors[0])
        return vectors

    async def aclose(self) -> None:
        """Release the HTTP client (only one the embedder created)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
        if self._http_client is not None and self._owns_http_client:
            http_client, self._http_client = self._http_client, None
            await http_client.aclose()
