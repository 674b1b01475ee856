"""Hook implementations of tether-google (the ``google`` entry point).

Importing this module loads no vendor SDK: the factories import it on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tether

if TYPE_CHECKING:
    from tether.config import ProviderConfig
    from tether.registry import EmbedderRegistrar, ProviderRegistrar

    from .embeddings import GoogleEmbedder
    from .provider import GoogleProvider

__all__ = ["create_embedder", "create_provider", "register_embedders", "register_providers"]


def create_provider(config: ProviderConfig) -> GoogleProvider:
    """The ``google`` provider for ``config``; never fails for a missing key."""
    from .provider import GoogleProvider

    return GoogleProvider(config)


def create_embedder(**settings: Any) -> GoogleEmbedder:
    """The ``google`` embedder; ``settings`` are :class:`GoogleEmbedder`'s arguments."""
    from .embeddings import GoogleEmbedder

    return GoogleEmbedder(**settings)


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    providers.add(
        "google",
        create_provider,
        prefixes=("gemini-",),
        description="Gemini models through the Gemini Developer API (google-genai SDK).",
        key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        default_model="gemini-2.5-flash",
        settings={
            "safety_settings": list[dict[str, Any]],
            "top_p": float,
            "top_k": float,
            "seed": int,
            "cached_content": str,
            "response_mime_type": str,
        },
    )


@tether.hookimpl
def register_embedders(embedders: EmbedderRegistrar) -> None:
    embedders.add("google", create_embedder)
