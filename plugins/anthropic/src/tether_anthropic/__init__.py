"""Anthropic (Claude) models for tether.

Installed, it registers the ``anthropic`` provider: ``tether run -m
anthropic/claude-sonnet-5-5 "..."`` with ``ANTHROPIC_API_KEY`` set. Importing this
package is cheap; the anthropic SDK is imported when the first request is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .provider import AnthropicProvider

__all__ = ["AnthropicProvider"]


def __getattr__(name: str) -> Any:
    if name == "AnthropicProvider":
        from .provider import AnthropicProvider

        return AnthropicProvider
    raise AttributeError(f"module 'tether_anthropic' has no attribute {name!r}")
