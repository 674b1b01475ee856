"""Live tests against the real Gemini API. They run only when GEMINI_API_KEY (or
GOOGLE_API_KEY) is set; TETHER_GOOGLE_LIVE_MODEL picks the model (gemini-2.5-flash)."""

from __future__ import annotations

import os

import pytest

import tether
from tether import Agent
from tether.config import Config, ProviderConfig
from tether.provider import ThinkingConfig
from tether_google import GoogleEmbedder

LIVE_KEY = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
MODEL = os.environ.get("TETHER_GOOGLE_LIVE_MODEL", "gemini-2.5-flash")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not LIVE_KEY, reason="set GEMINI_API_KEY or GOOGLE_API_KEY to run live Gemini tests"
    ),
]


@tether.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"It is 21°C and clear in {city}."


def live_config() -> Config:
    return Config(providers={"google": ProviderConfig(api_key=LIVE_KEY)})


async def test_live_text_answer() -> None:
    agent = Agent(f"google/{MODEL}", config=live_config(), max_output_tokens=512)
    try:
        result = await agent.run("Reply with exactly the word: pong")
    finally:
        await agent.aclose()
    assert result.ok
    assert "pong" in result.output.lower()
    assert result.usage.input_tokens > 0


async def test_live_tool_loop_with_thinking_replays_signatures() -> None:
    agent = Agent(
        f"google/{MODEL}",
        config=live_config(),
        tools=[get_weather],
        thinking=ThinkingConfig(budget_tokens=1024),
    )
    try:
        result = await agent.run(
            "Use the tool to get the weather in Lisbon and in Porto, then compare them."
        )
    finally:
        await agent.aclose()
    assert result.ok, result.error
    assert result.tool_calls >= 2
    assert "21" in result.output


async def test_live_embeddings() -> None:
    embedder = GoogleEmbedder("gemini-embedding-001", dimensions=768, api_key=LIVE_KEY)
    try:
        documents = await embedder.embed(["The cat sat on the mat.", "Quarterly revenue grew 8%."])
        query = await embedder.embed_query("Where did the cat sit?")
    finally:
        await embedder.aclose()
    assert len(documents) == 2 and all(len(v) == 768 for v in documents)
    assert len(query) == 768
