"""tether hooks of ``tether-openai``: the ``openai`` and ``azure`` providers, one
provider per OpenAI-compatible server profile (``ollama``, ``vllm``, ``lmstudio``,
``llamacpp``, ``llama-cpp-python``, ``openrouter``), and the ``openai`` embedder. Nothing here imports the openai SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import tether

from .profiles import PROFILES, Profile

if TYPE_CHECKING:
    from tether.config import ProviderConfig
    from tether.registry import EmbedderRegistrar, ProviderRegistrar

    from .embedder import OpenAIEmbedder
    from .provider import OpenAIProvider

__all__ = ["register_embedders", "register_providers"]

#: The model used when a profile's key is the first one found and no model is chosen.
DEFAULT_MODELS = {"openai": "gpt-4.1-mini"}

#: Keys of ``[providers.<profile>]`` besides the common ones, with their types.
SETTINGS: dict[str, Any] = {
    "api": Literal["responses", "chat"],
    "reasoning_summary": str | bool | None,
    "tool_choice": str,
    "stream_tool_choice": bool,
}

#: What ``[providers.azure]`` accepts besides :data:`SETTINGS`.
AZURE_SETTINGS: dict[str, Any] = {
    **SETTINGS,
    "endpoint": str,
    "api_version": str,
    "auth": Literal["key", "entra"],
    "token_scope": str,
}


def _factory(profile: Profile) -> Any:
    def build(config: ProviderConfig) -> OpenAIProvider:
        from .provider import OpenAIProvider

        return OpenAIProvider(config, profile=profile)

    build.__name__ = f"{profile.name}_provider"
    build.__doc__ = profile.description
    return build


def _embedder(**settings: Any) -> OpenAIEmbedder:
    from .embedder import OpenAIEmbedder

    return OpenAIEmbedder(**settings)


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    for profile in PROFILES:
        providers.add(
            profile.name,
            _factory(profile),
            prefixes=profile.prefixes,
            description=profile.description,
            key_variables=(profile.key_env,) if profile.key_required else (),
            default_model=DEFAULT_MODELS.get(profile.name),
            settings=AZURE_SETTINGS if profile.azure else SETTINGS,
        )


@tether.hookimpl
def register_embedders(embedders: EmbedderRegistrar) -> None:
    embedders.add("openai", _embedder)
