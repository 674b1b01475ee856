"""OpenAI's model catalogue, as data: context windows, output limits, prices, features.

Prices are US dollars per million tokens (standard tier, short-context rates). Every
entry can be corrected or extended from configuration without a release::

    [providers.openai.models."gpt-5.4"]
    context_window = 272000
    pricing = { input = 2.5, output = 15.0, cache_read = 0.25 }

Reasoning models (``thinking=True``) are served through the Responses API by default, so
their reasoning items survive between tool calls; the others through Chat Completions.
"""

from __future__ import annotations

from tether.provider import ModelCapabilities, ModelInfo, Pricing

__all__ = ["AZURE_MODELS", "CHAT_DEFAULT", "OPENAI_MODELS", "REASONING_DEFAULT"]


def _reasoning(
    context: int, output: int, input_price: float, output_price: float, cached: float
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
        pricing=Pricing(input=input_price, output=output_price, cache_read=cached),
    )


def _chat(
    context: int, output: int, input_price: float, output_price: float, cached: float | None
) -> ModelCapabilities:
    return ModelCapabilities(
        context_window=context,
        max_output_tokens=output,
        images_in_tool_results=False,
        vision=True,
        parallel_tool_calls=True,
        prompt_caching=True,
        thinking=False,
        structured_output=True,
        pricing=Pricing(input=input_price, output=output_price, cache_read=cached),
    )


REASONING_DEFAULT = ModelCapabilities(
    context_window=200_000,
    max_output_tokens=100_000,
    images_in_tool_results=True,
    vision=True,
    prompt_caching=True,
    thinking=True,
)
"""Capabilities assumed for an unknown OpenAI model configured as a reasoning model."""

CHAT_DEFAULT = ModelCapabilities(
    context_window=128_000, max_output_tokens=16_384, vision=True, prompt_caching=True
)
"""Capabilities assumed for an OpenAI model this catalogue does not list."""

OPENAI_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        "gpt-5.5",
        _reasoning(1_050_000, 128_000, 5.00, 30.00, 0.50),
        description="Flagship reasoning model.",
    ),
    ModelInfo(
        "gpt-5.4", _reasoning(1_050_000, 128_000, 2.50, 15.00, 0.25), description="Reasoning model."
    ),
    ModelInfo(
        "gpt-5.4-mini",
        _reasoning(400_000, 128_000, 0.75, 4.50, 0.075),
        description="Fast reasoning model.",
    ),
    ModelInfo(
        "gpt-5.4-nano",
        _reasoning(400_000, 128_000, 0.20, 1.25, 0.02),
        description="Cheapest reasoning model.",
    ),
    ModelInfo("gpt-5.2", _reasoning(400_000, 128_000, 1.75, 14.00, 0.175)),
    ModelInfo("gpt-5.1", _reasoning(400_000, 128_000, 1.25, 10.00, 0.125)),
    ModelInfo("gpt-5", _reasoning(400_000, 128_000, 1.25, 10.00, 0.125)),
    ModelInfo("gpt-5-mini", _reasoning(400_000, 128_000, 0.25, 2.00, 0.025)),
    ModelInfo("gpt-5-nano", _reasoning(400_000, 128_000, 0.05, 0.40, 0.005)),
    ModelInfo("o3", _reasoning(200_000, 100_000, 2.00, 8.00, 0.50)),
    ModelInfo("o4-mini", _reasoning(200_000, 100_000, 1.10, 4.40, 0.275)),
    ModelInfo(
        "gpt-4.1",
        _chat(1_047_576, 32_768, 2.00, 8.00, 0.50),
        description="Non-reasoning, long context.",
    ),
    ModelInfo("gpt-4.1-mini", _chat(1_047_576, 32_768, 0.40, 1.60, 0.10)),
    ModelInfo("gpt-4.1-nano", _chat(1_047_576, 32_768, 0.10, 0.40, 0.025)),
    ModelInfo("gpt-4o", _chat(128_000, 16_384, 2.50, 10.00, 1.25)),
    ModelInfo("gpt-4o-mini", _chat(128_000, 16_384, 0.15, 0.60, 0.075)),
)

AZURE_MODELS: tuple[ModelInfo, ...] = tuple(
    ModelInfo(
        info.id,
        info.capabilities,
        description=f"{info.description} Global Standard deployment.".lstrip(),
    )
    for info in OPENAI_MODELS
)
"""Azure OpenAI, keyed by the deployment name: a deployment named after its model (or
starting with the model's name, such as ``gpt-4.1-prod``) gets that model's entry; any
other name is mapped with ``model`` in its ``[providers.azure.models."<deployment>"]``
section. Prices are those of Global Standard deployments, which Azure bills at OpenAI's
list prices; Data Zone and Regional deployments cost more (about 10%), and provisioned
throughput is billed per hour, so set ``pricing`` per deployment for those."""
