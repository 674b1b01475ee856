"""Discovery through the entry point, the catalogue, and configuration overrides."""

from __future__ import annotations

import subprocess
import sys

from tether.config import ProviderConfig
from tether.plugins import PluginManager


def test_entry_point_registers_the_provider_with_its_prefix(monkeypatch):
    monkeypatch.delenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.setenv("TETHER_PLUGINS_ALLOW", "anthropic")
    providers = PluginManager().providers
    assert "anthropic" in providers
    assert providers.for_bare_model("claude-sonnet-5-5") == "anthropic"
    provider = providers.get("anthropic")(ProviderConfig())  # no key: still builds
    assert provider.name == "anthropic"
    assert "claude-opus-5-5" in {m.id for m in provider.catalogue()}


def test_importing_the_plugin_does_not_import_the_sdk():
    code = "import sys, tether_anthropic.plugin; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_catalogue_has_context_limits_and_cache_prices():
    from tether_anthropic.provider import AnthropicProvider

    provider = AnthropicProvider(ProviderConfig())
    caps = provider.capabilities("claude-sonnet-5-5")
    assert caps.context_window == 1_000_000
    assert (
        caps.pricing is not None
        and caps.pricing.cache_read is not None
        and caps.pricing.cache_write is not None
    )
    assert caps.images_in_tool_results and caps.prompt_caching and caps.thinking
    # dated snapshots inherit from their family
    assert provider.capabilities("claude-haiku-4-5-20251001").context_window == 200_000


def test_config_overrides_patch_and_extend_the_catalogue():
    from tether_anthropic.provider import AnthropicProvider

    config = ProviderConfig(
        models={
            "claude-haiku-4-5": {"context_window": 100_000},
            "claude-private-1": {"context_window": 50_000, "pricing": {"input": 1, "output": 2}},
        }
    )
    provider = AnthropicProvider(config)
    assert provider.capabilities("claude-haiku-4-5").context_window == 100_000
    assert provider.capabilities("claude-private-1").pricing.output == 2
    assert "claude-private-1" in {m.id for m in provider.catalogue()}


def test_repr_never_shows_the_key():
    from pydantic import SecretStr

    from tether_anthropic.provider import AnthropicProvider

    provider = AnthropicProvider(ProviderConfig(api_key=SecretStr("sk-ant-very-secret")))
    assert "sk-ant-very-secret" not in repr(provider)
    assert "ANTHROPIC_API_KEY" in repr(provider)


def test_tether_run_works_from_the_cli_with_only_the_key_set(fake_server, wire, tmp_path):
    """``tether run -m anthropic/...`` in a real subprocess, with the key and the SDK's own
    ANTHROPIC_BASE_URL in the environment and no configuration file."""
    from tether_testing.cli import run_tether
    from tether_testing.http import FakeResponse

    fake_server.queue(FakeResponse.sse(wire.reply(wire.text_block(0, ["Hello ", "from Claude"]))))
    env = {"ANTHROPIC_API_KEY": "sk-ant-cli-test", "ANTHROPIC_BASE_URL": fake_server.url}
    args = ["run", "-m", f"anthropic/{wire.MODEL}", "--tools", "", "Say hello"]
    out = run_tether(
        tmp_path, *args, plugins="anthropic", env=env, unset=["ANTHROPIC_"], timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from Claude"
    sent = fake_server.requests[0].json()
    assert sent["model"] == wire.MODEL
    assert sent["messages"][0]["content"][0]["text"] == "Say hello"
