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
    from .vertex import VertexGeminiProvider

__all__ = [
    "VERTEX_FAMILIES",
    "create_embedder",
    "create_provider",
    "create_vertex_provider",
    "register_embedders",
    "register_providers",
]

VERTEX_FAMILIES = {"gemini-": "tether-google", "claude-": "tether-anthropic[vertex]"}
"""The model families of the ``vertex`` platform and what to install for each."""

GEMINI_SETTINGS: dict[str, Any] = {
    "safety_settings": list[dict[str, Any]],
    "top_p": float,
    "top_k": float,
    "seed": int,
    "cached_content": str,
    "response_mime_type": str,
}


def create_provider(config: ProviderConfig) -> GoogleProvider:
    """The ``google`` provider for ``config``; never fails for a missing key."""
    from .provider import GoogleProvider

    return GoogleProvider(config)


def create_vertex_provider(config: ProviderConfig) -> VertexGeminiProvider:
    """The ``vertex`` provider of Gemini models; finds credentials on first use."""
    from .vertex import VertexGeminiProvider

    return VertexGeminiProvider(config)


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
        settings=GEMINI_SETTINGS,
    )
    providers.add(
        "vertex",
        create_vertex_provider,
        family="gemini-",
        family_plugins=VERTEX_FAMILIES,
        description="Gemini on Google Cloud Vertex AI (Application Default Credentials).",
        default_model="gemini-2.5-flash",
        settings={"project": str, "location": str, **GEMINI_SETTINGS},
    )


@tether.hookimpl
def register_embedders(embedders: EmbedderRegistrar) -> None:
    embedders.add("google", create_embedder)
