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
from tether.testing import RecordingSleep
from tether_openai import plugin
from tether_testing.http import FakeServer

API_KEY = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def _isolated_environment(offline: Callable[..., None]) -> None:
    """Offline tests see no real key, base URL or plugins from the environment."""
    offline(plugins=())


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
