"""Entry point of the ``tether-anthropic`` distribution (``anthropic = "tether_anthropic.plugin"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import tether

if TYPE_CHECKING:
    from tether.config import ProviderConfig
    from tether.provider import Provider
    from tether.registry import ProviderRegistrar

__all__ = ["make_provider", "register_providers"]


def make_provider(config: ProviderConfig) -> Provider:
    """Build the provider; imports the SDK only when a request is first made."""
    from .provider import AnthropicProvider

    return AnthropicProvider(config)


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    providers.add(
        "anthropic",
        make_provider,
        prefixes=("claude-",),
        description="Anthropic Claude models (Messages API)",
        key_variables=("ANTHROPIC_API_KEY",),
        default_model="claude-sonnet-4-5",
        settings={
            "prompt_caching": bool,
            "cache_ttl": Literal["5m", "1h"],
            "thinking_display": str,
        },
    )
