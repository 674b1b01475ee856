"""Fixtures for tether-openai's tests: an agent wired to the plugin and a loopback server.

Agents load only this plugin (no entry points), read no configuration file and never
sleep: retries go through a recording ``sleep``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.config import Config, ProviderConfig
from tether.runner import RetryPolicy
from tether.testing.http import FakeServer
from tether_openai import plugin

API_KEY = "sk-test-0123456789abcdef"


class RecordingSleep:
    """A ``RetryPolicy.sleep`` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture(autouse=True)
def _isolated_environment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("live"):
        return
    monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENROUTER_API_KEY",
        "OLLAMA_BASE_URL",
        "TETHER_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def openai_agent(
    fake_server: FakeServer, tmp_path: Path, sleep: RecordingSleep
) -> Callable[..., tether.Agent]:
    """``openai_agent(model="openai/gpt-4.1", provider_settings={...}, **agent_kwargs)``:
    an Agent whose provider talks to ``fake_server``."""

    def build(
        model: str = "openai/gpt-4.1",
        *,
        provider_settings: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> tether.Agent:
        name = model.partition("/")[0]
        settings: dict[str, Any] = {"base_url": fake_server.url + "/v1", "api_key": API_KEY}
        settings.update(provider_settings or {})
        config = Config(providers={name: ProviderConfig.model_validate(settings)})
        kwargs.setdefault("retry", RetryPolicy(sleep=sleep))
        kwargs.setdefault("cwd", tmp_path)
        return tether.Agent(model, config=config, plugins=[plugin], **kwargs)

    return build
