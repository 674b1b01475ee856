"""The Claude models tether knows, as data: limits, prices and how each one thinks.

Prices are US dollars per million tokens; ``cache_write`` is the 5-minute cache-write
rate (the only TTL this plugin asks for). Every entry can be patched, and new models
added, from configuration::

    [providers.anthropic.models."claude-sonnet-5-5"]
    context_window = 200000

A model id that is not listed inherits from the longest listed id it starts with (dated
snapshots such as ``claude-haiku-4-5-20251001``), else from :data:`DEFAULT_CAPABILITIES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tether.provider import ModelCapabilities, ModelInfo, Pricing

__all__ = ["DEFAULT_CAPABILITIES", "MODELS", "ModelTraits", "traits"]

ThinkingStyle = Literal["extended", "adaptive", "always"]


@dataclass(frozen=True, slots=True)
class ModelTraits:
    """Request-shaping facts the core capabilities do not cover.

    ``thinking``: ``"extended"`` models take ``{"type": "enabled", "budget_tokens": N}``;
    ``"adaptive"`` models take ``{"type": "adaptive"}`` with ``output_config.effort``;
    ``"always"`` models think on every request and reject a manual budget.
    ``sampling``: whether a non-default ``temperature`` is accepted.
    """

    thinking: ThinkingStyle = "adaptive"
    sampling: bool = False


def _caps(
    context: int,
    output: int,
    price_in: float,
    price_out: float,
    cache_read: float,
    cache_write: float,
) -> ModelCapabilities:
    return ModelCapabilities(
        context_window=context,
        max_output_tokens=output,
        images_in_tool_results=True,
        vision=True,
        parallel_tool_calls=True,
        prompt_caching=True,
        thinking=True,
        structured_output=True,
        pricing=Pricing(
            input=price_in, output=price_out, cache_read=cache_read, cache_write=cache_write
        ),
    )


_M = 1_000_000
_K200 = 200_000

MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        "claude-fable-5-1", _caps(_M, 128_000, 10, 50, 0.25, 12.5), description="Claude Fable 5.1"
    ),
    ModelInfo("claude-fable-5", _caps(_M, 128_000, 10, 50, 1, 12.5), description="Claude Fable 5"),
    ModelInfo(
        "claude-mythos-5-1",
        _caps(_M, 128_000, 10, 50, 0.25, 12.5),
        description="Claude Mythos 5.1 (limited availability)",
    ),
    ModelInfo(
        "claude-mythos-5",
        _caps(_M, 128_000, 10, 50, 1, 12.5),
        description="Claude Mythos 5 (limited availability)",
    ),
    ModelInfo("claude-opus-5-5", _caps(_M, 128_000, 4, 20, 0.2, 5), description="Claude Opus 5.5"),
    ModelInfo("claude-opus-5", _caps(_M, 128_000, 5, 25, 0.5, 6.25), description="Claude Opus 5"),
    ModelInfo(
        "claude-sonnet-5-5", _caps(_M, 128_000, 2, 10, 0.1, 2.5), description="Claude Sonnet 5.5"
    ),
    ModelInfo(
        "claude-sonnet-5", _caps(_M, 128_000, 2, 10, 0.2, 2.5), description="Claude Sonnet 5"
    ),
    ModelInfo(
        "claude-haiku-5-5",
        _caps(_M, 128_000, 0.1, 0.5, 0.01, 0.125),
        description="Claude Haiku 5.5 (prompts over 100k tokens are billed at 5x)",
    ),
    ModelInfo(
        "claude-opus-4-8", _caps(_M, 128_000, 5, 25, 0.5, 6.25), description="Claude Opus 4.8"
    ),
    ModelInfo(
        "claude-opus-4-7", _caps(_M, 128_000, 5, 25, 0.5, 6.25), description="Claude Opus 4.7"
    ),
    ModelInfo(
        "claude-opus-4-6", _caps(_M, 128_000, 5, 25, 0.5, 6.25), description="Claude Opus 4.6"
    ),
    ModelInfo(
        "claude-sonnet-4-6", _caps(_M, 128_000, 3, 15, 0.3, 3.75), description="Claude Sonnet 4.6"
    ),
    ModelInfo(
        "claude-opus-4-5", _caps(_K200, 64_000, 5, 25, 0.5, 6.25), description="Claude Opus 4.5"
    ),
    ModelInfo(
        "claude-sonnet-4-5", _caps(_K200, 64_000, 3, 15, 0.3, 3.75), description="Claude Sonnet 4.5"
    ),
    ModelInfo(
        "claude-haiku-4-5", _caps(_K200, 64_000, 1, 5, 0.1, 1.25), description="Claude Haiku 4.5"
    ),
)

_TRAITS: dict[str, ModelTraits] = {
    "claude-fable-5-1": ModelTraits(thinking="always"),
    "claude-fable-5": ModelTraits(thinking="adaptive"),
    "claude-mythos-5-1": ModelTraits(thinking="always"),
    "claude-mythos-5": ModelTraits(thinking="adaptive"),
    "claude-opus-5-5": ModelTraits(thinking="always"),
    "claude-opus-5": ModelTraits(thinking="adaptive"),
    "claude-sonnet-5-5": ModelTraits(thinking="adaptive"),
    "claude-sonnet-5": ModelTraits(thinking="adaptive"),
    "claude-haiku-5-5": ModelTraits(thinking="adaptive"),
    "claude-opus-4-8": ModelTraits(thinking="adaptive", sampling=True),
    "claude-opus-4-7": ModelTraits(thinking="adaptive", sampling=True),
    "claude-opus-4-6": ModelTraits(thinking="adaptive", sampling=True),
    "claude-sonnet-4-6": ModelTraits(thinking="adaptive", sampling=True),
    "claude-opus-4-5": ModelTraits(thinking="extended", sampling=True),
    "claude-sonnet-4-5": ModelTraits(thinking="extended", sampling=True),
    "claude-haiku-4-5": ModelTraits(thinking="extended", sampling=True),
}

DEFAULT_CAPABILITIES = ModelCapabilities(
    context_window=_K200,
    max_output_tokens=32_000,
    images_in_tool_results=True,
    vision=True,
    parallel_tool_calls=True,
    prompt_caching=True,
    thinking=True,
)


def traits(model: str) -> ModelTraits:
    """The traits of ``model``; unlisted ids inherit from their longest listed prefix, and
    unknown models get the conventions of current models (adaptive thinking, no sampling
    parameters beyond the defaults)."""
    found = _TRAITS.get(model)
    if found is not None:
        return found
    prefixes = [known for known in _TRAITS if model.startswith(known)]
    if prefixes:
        return _TRAITS[max(prefixes, key=len)]
    return ModelTraits()
