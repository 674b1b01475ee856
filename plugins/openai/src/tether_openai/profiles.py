"""Named profiles: OpenAI itself and the OpenAI-compatible servers tether knows by name.

Each profile is registered as its own provider, so ``ollama/llama3.2`` or
``openrouter/anthropic/claude-sonnet-4`` work with nothing but the server (or the key) in
place. A profile fixes what differs between servers: the default base URL, which
environment variable holds the key and whether one is needed at all, and which OpenAI
features the server understands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tether.provider import ModelCapabilities, ModelInfo

from .catalogue import AZURE_MODELS, CHAT_DEFAULT, OPENAI_MODELS

__all__ = ["AZURE", "OPENAI", "PROFILES", "Profile"]


@dataclass(frozen=True, slots=True)
class Profile:
    """How to reach one OpenAI-style API.

    ``base_url`` is the default endpoint (``None``: the SDK's own default, which honours
    ``OPENAI_BASE_URL``); ``base_url_env`` names a variable that overrides it.
    ``key_required=False`` means requests go out without a key when none is configured
    (local servers). ``openai_features`` enables what only OpenAI's API accepts: the
    Responses API, ``prompt_cache_key``, ``max_completion_tokens`` and ``reasoning_effort``.
    ``azure`` selects the SDK's Azure client (endpoint, API version, key or Entra ID token;
    see :mod:`tether_openai.azure`).
    """

    name: str
    label: str
    key_env: str
    key_required: bool
    base_url: str | None
    base_url_env: str | None = None
    openai_features: bool = False
    prefixes: tuple[str, ...] = ()
    models: tuple[ModelInfo, ...] = ()
    default_capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    description: str = ""
    azure: bool = False
    assistant_content_with_calls: str | None = ""
    """What an assistant message carrying only tool calls sends as ``content``: OpenAI
    accepts ``null``; llama.cpp-based servers answer HTTP 500 to it and accept ``""``."""
    tool_choice: str | None = None
    """``tool_choice`` sent with the tools unless configured (``None``: not sent)."""
    streams_with_tool_choice: bool = True
    """``False`` for servers that answer a streamed request carrying ``tool_choice`` with an
    empty body: such turns are sent unstreamed."""


_LOCAL = ModelCapabilities(context_window=8_192, max_output_tokens=4_096)
_LOCAL_SCHEMA = ModelCapabilities(
    context_window=8_192, max_output_tokens=4_096, structured_output=True
)

OPENAI = Profile(
    name="openai",
    label="OpenAI",
    key_env="OPENAI_API_KEY",
    key_required=True,
    base_url=None,
    openai_features=True,
    prefixes=("gpt-", "o1", "o3", "o4", "chatgpt-", "codex-"),
    models=OPENAI_MODELS,
    default_capabilities=CHAT_DEFAULT,
    description="OpenAI: Chat Completions and the Responses API.",
    assistant_content_with_calls=None,
)

AZURE = Profile(
    name="azure",
    label="Azure OpenAI",
    key_env="AZURE_OPENAI_API_KEY",
    key_required=True,
    base_url=None,
    openai_features=True,
    models=AZURE_MODELS,
    default_capabilities=CHAT_DEFAULT,
    description="Azure OpenAI and Azure AI Foundry deployments (azure/<deployment>): "
    "an API key or Microsoft Entra ID.",
    azure=True,
    assistant_content_with_calls=None,
)

PROFILES: tuple[Profile, ...] = (
    OPENAI,
    AZURE,
    Profile(
        name="ollama",
        label="Ollama",
        key_env="OLLAMA_API_KEY",
        key_required=False,
        base_url="http://localhost:11434/v1",
        base_url_env="OLLAMA_BASE_URL",
        default_capabilities=_LOCAL_SCHEMA,
        description="A local Ollama server (OpenAI-compatible API).",
    ),
    Profile(
        name="vllm",
        label="vLLM",
        key_env="VLLM_API_KEY",
        key_required=False,
        base_url="http://localhost:8000/v1",
        base_url_env="VLLM_BASE_URL",
        default_capabilities=ModelCapabilities(
            context_window=32_768, max_output_tokens=8_192, structured_output=True
        ),
        description="A vLLM server (OpenAI-compatible API).",
    ),
    Profile(
        name="lmstudio",
        label="LM Studio",
        key_env="LMSTUDIO_API_KEY",
        key_required=False,
        base_url="http://localhost:1234/v1",
        base_url_env="LMSTUDIO_BASE_URL",
        default_capabilities=_LOCAL_SCHEMA,
        description="LM Studio's local server (OpenAI-compatible API).",
    ),
    Profile(
        name="llamacpp",
        label="llama.cpp server",
        key_env="LLAMACPP_API_KEY",
        key_required=False,
        base_url="http://localhost:8080/v1",
        base_url_env="LLAMACPP_BASE_URL",
        default_capabilities=_LOCAL_SCHEMA,
        description="llama.cpp's llama-server (OpenAI-compatible API).",
    ),
    Profile(
        name="llama-cpp-python",
        label="llama-cpp-python server",
        key_env="LLAMA_CPP_PYTHON_API_KEY",
        key_required=False,
        base_url="http://localhost:8000/v1",
        base_url_env="LLAMA_CPP_PYTHON_BASE_URL",
        default_capabilities=_LOCAL_SCHEMA,
        description="llama-cpp-python's server (OpenAI-compatible API; tool turns unstreamed).",
        tool_choice="auto",
        streams_with_tool_choice=False,
    ),
    Profile(
        name="openrouter",
        label="OpenRouter",
        key_env="OPENROUTER_API_KEY",
        key_required=True,
        base_url="https://openrouter.ai/api/v1",
        base_url_env="OPENROUTER_BASE_URL",
        default_capabilities=ModelCapabilities(
            context_window=128_000, max_output_tokens=16_384, vision=True
        ),
        description="OpenRouter: many vendors' models behind one OpenAI-compatible API.",
    ),
)
