"""The Gemini models tether knows, as data.

Prices are US dollars per million tokens on the Gemini Developer API (paid tier, prompts
up to 200k tokens where the price has tiers); :data:`VERTEX_MODELS` are the same models at
Vertex AI's Standard (pay-as-you-go) prices, which differ for the 2.0 models. ``cache_read`` is the implicit/explicit
context-cache rate; Gemini charges nothing extra to write its implicit cache, so
``cache_write`` stays unset. Override any entry, or add a model, in configuration::

    [providers.google.models."gemini-2.5-pro"]
    context_window = 2000000
    pricing = { input = 2.5, output = 15.0, cache_read = 0.25 }
"""

from __future__ import annotations

from tether.provider import ModelCapabilities, ModelInfo, Pricing

__all__ = ["DEFAULT_CAPABILITIES", "MODELS", "VERTEX_MODELS"]

_MILLION = 1_048_576

DEFAULT_CAPABILITIES = ModelCapabilities(
    context_window=_MILLION,
    max_output_tokens=8_192,
    vision=True,
    parallel_tool_calls=True,
)
"""What an unknown Gemini model is assumed to support: conservative output, no thinking."""


def _model(
    model_id: str,
    description: str,
    pricing: Pricing,
    *,
    max_output: int = 65_536,
    thinking: bool = True,
    caching: bool = True,
    images_in_tool_results: bool = False,
) -> ModelInfo:
    return ModelInfo(
        id=model_id,
        description=description,
        capabilities=ModelCapabilities(
            context_window=_MILLION,
            max_output_tokens=max_output,
            images_in_tool_results=images_in_tool_results,
            vision=True,
            parallel_tool_calls=True,
            prompt_caching=caching,
            thinking=thinking,
            structured_output=True,
            pricing=pricing,
        ),
    )


MODELS: tuple[ModelInfo, ...] = (
    _model(
        "gemini-3-pro-preview",
        "Gemini 3 Pro (preview): the most capable Gemini model, thinking by default.",
        Pricing(input=2.0, output=12.0, cache_read=0.20),
        images_in_tool_results=True,
    ),
    _model(
        "gemini-3-flash-preview",
        "Gemini 3 Flash (preview): frontier-class quality at Flash speed and price.",
        Pricing(input=0.50, output=3.0, cache_read=0.05),
        images_in_tool_results=True,
    ),
    _model(
        "gemini-2.5-pro",
        "Gemini 2.5 Pro: strong reasoning and coding, thinking by default.",
        Pricing(input=1.25, output=10.0, cache_read=0.125),
    ),
    _model(
        "gemini-2.5-flash",
        "Gemini 2.5 Flash: fast hybrid-reasoning model with a thinking budget.",
        Pricing(input=0.30, output=2.50, cache_read=0.03),
    ),
    _model(
        "gemini-2.5-flash-lite",
        "Gemini 2.5 Flash-Lite: the cheapest 2.5 model, thinking off by default.",
        Pricing(input=0.10, output=0.40, cache_read=0.01),
    ),
    _model(
        "gemini-2.0-flash",
        "Gemini 2.0 Flash: previous-generation workhorse, no thinking.",
        Pricing(input=0.10, output=0.40, cache_read=0.025),
        max_output=8_192,
        thinking=False,
    ),
    _model(
        "gemini-2.0-flash-lite",
        "Gemini 2.0 Flash-Lite: previous-generation low-cost model.",
        Pricing(input=0.075, output=0.30),
        max_output=8_192,
        thinking=False,
        caching=False,
    ),
)


_VERTEX_PRICES = {
    "gemini-2.0-flash": Pricing(input=0.15, output=0.60, cache_read=0.0375),
}
"""Vertex AI prices where they differ from the Gemini Developer API's."""

VERTEX_MODELS: tuple[ModelInfo, ...] = tuple(
    ModelInfo(
        id=info.id,
        description=info.description,
        capabilities=info.capabilities.updated({"pricing": _VERTEX_PRICES[info.id]})
        if info.id in _VERTEX_PRICES
        else info.capabilities,
    )
    for info in MODELS
)
"""The Gemini models of the ``vertex`` platform (``vertex/gemini-2.5-pro``)."""
