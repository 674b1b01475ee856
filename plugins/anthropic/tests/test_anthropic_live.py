"""Against the real API; run only when ANTHROPIC_API_KEY is set (``pytest -m live``)."""

from __future__ import annotations

import os

import pytest

import tether_anthropic.plugin
from tether import Agent
from tether.config import Config
from tether.events import TextDelta

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY is not set"
    ),
]

LIVE_MODEL = os.environ.get("TETHER_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5")


@pytest.fixture
def live_env(monkeypatch):
    monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")


async def test_live_tool_round_trip(live_env):
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    agent = Agent(
        f"anthropic/{LIVE_MODEL}", tools=[add], config=Config(), plugins=[tether_anthropic.plugin]
    )
    deltas = []
    async for event in agent.stream(
        "Use the add tool to add 19 and 23, then reply with the number only."
    ):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
    assert "42" in "".join(deltas)
    await agent.aclose()


async def test_live_key_is_accepted(live_env):
    from tether.config import ProviderConfig
    from tether_anthropic.provider import AnthropicProvider

    provider = AnthropicProvider(ProviderConfig())
    await provider.verify_key()
    await provider.aclose()
