"""Entry point of the ``tether-anthropic`` distribution (``anthropic = "tether_anthropic.plugin"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import tether
from tether.errors import ConfigError

if TYPE_CHECKING:
    from tether.config import ProviderConfig
    from tether.provider import Provider
    from tether.registry import ProviderRegistrar

__all__ = [
    "VERTEX_FAMILIES",
    "make_bedrock_provider",
    "make_provider",
    "make_vertex_provider",
    "register_providers",
]

VERTEX_FAMILIES = {"claude-": "tether-anthropic[vertex]", "gemini-": "tether-google"}
"""The model families of the ``vertex`` platform and what to install for each."""

_SETTINGS = {
    "prompt_caching": bool,
    "cache_ttl": Literal["5m", "1h"],
    "thinking_display": str,
}


def make_provider(config: ProviderConfig) -> Provider:
    """Build the provider; imports the SDK only when a request is first made."""
    from .provider import AnthropicProvider

    return AnthropicProvider(config)


def make_vertex_provider(config: ProviderConfig) -> Provider:
    """Claude on Vertex AI (``vertex/claude-*``); finds credentials on first use.

    Raises ``ConfigError`` naming the extra to install when tether-google-auth (which the
    ``vertex`` extra brings) is missing."""
    try:
        from .vertex import VertexClaudeProvider
    except ModuleNotFoundError as exc:
        if exc.name != "tether_google_auth":
            raise
        raise ConfigError(
            "Claude on Vertex AI needs the Google Cloud credentials of the vertex extra: "
            "`uv pip install './plugins/anthropic[vertex]'`."
        ) from exc

    return VertexClaudeProvider(config)


def make_bedrock_provider(config: ProviderConfig) -> Provider:
    """Claude on Amazon Bedrock; boto3 is imported only when a request is first made."""
    from .bedrock import BedrockProvider

    return BedrockProvider(config)


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    providers.add(
        "anthropic",
        make_provider,
        prefixes=("claude-",),
        description="Anthropic Claude models (Messages API)",
        key_variables=("ANTHROPIC_API_KEY",),
        default_model="claude-sonnet-4-5",
        settings=_SETTINGS,
    )
    providers.add(
        "bedrock",
        make_bedrock_provider,
        description="Anthropic Claude models on Amazon Bedrock (AWS credentials)",
        settings={**_SETTINGS, "region": str, "profile": str},
    )
    providers.add(
        "vertex",
        make_vertex_provider,
        family="claude-",
        family_plugins=VERTEX_FAMILIES,
        description="Claude on Google Cloud Vertex AI (Application Default Credentials).",
        settings={**_SETTINGS, "project": str, "location": str},
    )
