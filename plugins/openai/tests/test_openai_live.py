"""Live checks against the real APIs; they run only when the key is set."""

from __future__ import annotations

import os

import pytest

import tether
from tether.config import Config, ProviderConfig
from tether_openai import plugin

pytestmark = pytest.mark.live


def key() -> str:
    value = os.environ.get("OPENAI_API_KEY")
    if not value:
        pytest.skip("set OPENAI_API_KEY to run the live OpenAI tests")
    return value


@pytest.mark.parametrize("model", ["openai/gpt-4.1-mini", "openai/gpt-5.4-mini"])
async def test_live_tool_round_trip(model: str) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    key()
    config = Config(providers={"openai": ProviderConfig()})
    agent = tether.Agent(
        model,
        config=config,
        plugins=[plugin],
        tools=[add],
        system="Use the add tool for arithmetic.",
    )
    result = await agent.run("What is 1234 + 4321? Use the tool.")
    await agent.aclose()
    assert result.tool_calls >= 1
    assert "5555" in result.output.replace(",", "")
