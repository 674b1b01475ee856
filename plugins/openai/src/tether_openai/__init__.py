"""tether-openai: OpenAI (Chat Completions and the Responses API) and OpenAI-compatible
servers (Ollama, vLLM, LM Studio, llama.cpp, OpenRouter) as tether providers, plus the
``openai`` embedder. Installing the distribution registers them; nothing to import."""

from __future__ import annotations

__all__: list[str] = []
