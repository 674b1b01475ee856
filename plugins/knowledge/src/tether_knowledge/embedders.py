"""Embedders: turn text into vectors for the knowledge base.

An embedder is any object with this shape (a structural :class:`typing.Protocol`, no base
class to inherit)::

    class MyEmbedder:
        name = "my-model"
        dimensions = 384                      # None if only known after the first call

        async def embed(self, texts):         # documents, in order, one vector each
            ...
        async def embed_query(self, text):    # one search query
            ...

Plugins register a factory through the ``register_embedders`` hook; the factory is called
with the keyword settings of ``[knowledge] settings`` (or of the caller) and returns an
embedder. Import heavy libraries (torch, vendor SDKs) inside the factory or on first use,
never at module import time.

Models that embed queries and documents differently (an instruction prefix, a different
task type) do so in :meth:`Embedder.embed_query`; symmetric models return
``(await self.embed([text]))[0]``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tether.errors import ConfigError

if TYPE_CHECKING:
    from tether.registry import EmbedderRegistrar

__all__ = ["Embedder", "EmbedderFactory", "available_embedders", "load_embedder"]

log = logging.getLogger("tether_knowledge")


@runtime_checkable
class Embedder(Protocol):
    """Text → vector model used by the knowledge base.

    Contract:

    - ``name`` identifies the model; an index built with one embedder must not be queried
      with another, and backends store this name to detect it.
    - ``dimensions`` is the vector length, or ``None`` until the first call reveals it.
    - :meth:`embed` returns exactly one vector per input text, in input order, each of
      length ``dimensions``. It may batch internally. An empty input returns ``[]``.
    - :meth:`embed_query` embeds a search query for comparison with document vectors.
    - Vectors need not be normalised; the knowledge base normalises them before use.
    - Failures raise :class:`~tether.errors.KnowledgeBackendError` (or a subclass) with a
      message saying what to fix, never a vendor exception.
    """

    name: str
    dimensions: int | None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per document text, in order."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...


EmbedderFactory = Callable[..., Embedder]


def available_embedders(embedders: EmbedderRegistrar) -> list[str]:
    """Names of the embedders that installed plugins register."""
    return embedders.names()


def load_embedder(
    name: str | None,
    embedders: EmbedderRegistrar,
    settings: Mapping[str, Any] | None = None,
) -> Embedder | None:
    """Build the embedder registered as ``name`` in ``embedders`` (a plugin manager's
    ``embedders`` registrar) with ``settings``.

    ``None`` (no embedder configured) returns ``None``: the knowledge base then searches
    by keywords only, and logs that it does. An unknown name raises
    :class:`~tether.errors.ConfigError` listing the installed embedders.
    """
    if name is None:
        log.info("No embedder configured: the knowledge base searches by keywords only.")
        return None
    factory = embedders.get(
        name,
        advice="Install a plugin that provides it, or remove [knowledge] embedder to search "
        "by keywords only.",
    )
    embedder = factory(**dict(settings or {}))
    if not isinstance(embedder, Embedder):
        raise ConfigError(
            f'The embedder factory registered as "{name}" returned {type(embedder).__name__}, '
            f"which lacks name, dimensions, embed() or embed_query(). Report this to the "
            f"plugin's authors."
        )
    return embedder
