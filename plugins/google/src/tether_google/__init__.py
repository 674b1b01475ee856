"""tether-google: Gemini models and embeddings for tether, through the google-genai SDK.

::

    $ export GEMINI_API_KEY=...
    $ tether run -m google/gemini-2.5-flash "Summarise README.md"

Importing this package is cheap; the SDK loads when a provider or embedder is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embeddings import GoogleEmbedder
    from .provider import GoogleProvider

__all__ = ["GoogleEmbedder", "GoogleProvider"]


def __getattr__(name: str) -> Any:
    if name == "GoogleProvider":
        from .provider import GoogleProvider

        return GoogleProvider
    if name == "GoogleEmbedder":
        from .embeddings import GoogleEmbedder

        return GoogleEmbedder
    raise AttributeError(f"module 'tether_google' has no attribute {name!r}")
