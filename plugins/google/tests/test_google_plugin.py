"""Registration through the ``tether`` entry point, key and base-URL resolution,
validate_auth, and a cheap import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tether.config import ProviderConfig
from tether.errors import AuthenticationError
from tether.messages import Message
from tether.plugins import PluginManager
from tether.provider import ModelRequest
from tether.resolve import parse_model_string
from tether_google import GoogleProvider
from tether_testing.cli import run_tether
from tether_testing.http import FakeResponse, FakeServer


def test_entry_point_registers_the_provider_and_the_embedder() -> None:
    plugins = PluginManager()
    assert "google" in plugins.providers
    assert parse_model_string("gemini-2.5-flash", plugins.providers).provider == "google"
    assert "google" in plugins.embedders
    provider = plugins.providers.get("google")(ProviderConfig())
    assert provider.name == "google"
    embedder = plugins.embedders.get("google")(model="text-embedding-004")
    assert embedder.dimensions == 768
    assert not [e for e in plugins.errors if "google" in str(e)]


def test_importing_the_plugin_and_listing_models_loads_no_sdk() -> None:
    code = (
        "import sys, tether_google.plugin as p; from tether.config import ProviderConfig; "
        "p.create_provider(ProviderConfig()).catalogue(); p.create_embedder(); "
        "print('google.genai' in sys.modules, 'httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_catalogue_lists_current_models_with_pricing_and_honours_overrides() -> None:
    provider = GoogleProvider(
        ProviderConfig(
            models={
                "gemini-2.5-pro": {"context_window": 2_000_000},
                "gemini-exp-1206": {"thinking": True, "pricing": {"input": 1.0, "output": 2.0}},
            }
        )
    )
    ids = [m.id for m in provider.catalogue()]
    assert {"gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview", "gemini-exp-1206"} <= set(
        ids
    )
    flash = provider.capabilities("gemini-2.5-flash")
    assert flash.pricing is not None and flash.pricing.cache_read is not None
    assert flash.thinking and flash.vision
    assert provider.capabilities("gemini-2.5-pro").context_window == 2_000_000
    assert provider.capabilities("gemini-exp-1206").pricing.input == 1.0  # type: ignore[union-attr]
    assert provider.capabilities("gemini-2.5-flash-preview-09-2025").thinking


def models_page() -> FakeResponse:
    """A ``GET /models`` answer as the Gemini API sends it."""
    return FakeResponse.json(
        {
            "models": [
                {
                    "name": "models/gemini-2.5-flash",
                    "displayName": "Gemini 2.5 Flash",
                    "inputTokenLimit": 1048576,
                    "outputTokenLimit": 65536,
                    "supportedGenerationMethods": ["generateContent", "countTokens"],
                }
            ],
            "nextPageToken": "next",
        }
    )


async def stream_once(provider: GoogleProvider) -> None:
    request = ModelRequest(model="gemini-2.5-flash", messages=[Message.user("Hi")])
    async for _ in provider.stream(request):
        pass


async def test_google_gemini_base_url_environment_variable_is_honoured(monkeypatch, wire) -> None:  # type: ignore[no-untyped-def]
    with FakeServer() as server:
        server.queue(wire.reply("From the gateway."))
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", wire.key)
        provider = GoogleProvider(ProviderConfig())
        try:
            await stream_once(provider)
        finally:
            await provider.aclose()
        assert len(server.requests) == 1
        assert server.requests[0].headers["x-goog-api-key"] == wire.key


async def test_configured_base_url_wins_over_the_environment(monkeypatch, wire) -> None:  # type: ignore[no-untyped-def]
    with FakeServer() as configured, FakeServer() as from_env:
        configured.queue(wire.reply("Configured."))
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", from_env.url)
        provider = GoogleProvider(ProviderConfig(api_key=wire.key, base_url=configured.url))
        try:
            await stream_once(provider)
        finally:
            await provider.aclose()
        assert len(configured.requests) == 1
        assert from_env.requests == []


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
async def test_key_from_either_documented_variable(monkeypatch, server, wire, variable) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(variable, "key-from-" + variable)
    server.queue(wire.reply("Hi."))
    provider = GoogleProvider(ProviderConfig(base_url=server.url))
    try:
        await stream_once(provider)
    finally:
        await provider.aclose()
    assert server.requests[0].headers["x-goog-api-key"] == "key-from-" + variable


async def test_api_key_env_names_the_variable_in_errors(monkeypatch, server) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GEMINI_API_KEY", "ignored-because-api_key_env-is-set")
    provider = GoogleProvider(ProviderConfig(api_key_env="MY_GEMINI_KEY", base_url=server.url))
    with pytest.raises(AuthenticationError, match="MY_GEMINI_KEY"):
        await provider.validate_auth()
    assert server.requests == []


async def test_validate_auth_without_a_key(server) -> None:  # type: ignore[no-untyped-def]
    provider = GoogleProvider(ProviderConfig(base_url=server.url))
    with pytest.raises(AuthenticationError) as caught:
        await provider.validate_auth()
    assert "GEMINI_API_KEY" in str(caught.value) and "GOOGLE_API_KEY" in str(caught.value)


async def test_validate_auth_sends_nothing_when_a_key_is_set(server, wire) -> None:  # type: ignore[no-untyped-def]
    provider = GoogleProvider(ProviderConfig(api_key=wire.key, base_url=server.url))
    try:
        await provider.validate_auth()
    finally:
        await provider.aclose()
    assert server.requests == []


async def test_verify_key_asks_the_api_with_one_request(server, wire) -> None:  # type: ignore[no-untyped-def]
    detail = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
    server.queue(
        wire.error(
            400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", detail
        ),
        models_page(),
    )
    provider = GoogleProvider(ProviderConfig(api_key=wire.key, base_url=server.url))
    try:
        with pytest.raises(AuthenticationError, match="rejected the API key"):
            await provider.verify_key()
        await provider.verify_key()
    finally:
        await provider.aclose()
    assert [r.method for r in server.requests] == ["GET", "GET"]
    assert "/models" in server.requests[0].path


def cli(tmp_path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """Run the real ``tether`` command with no configuration file and only this plugin."""
    unset = ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
    return run_tether(tmp_path, *args, plugins="google", env=env, unset=unset, timeout=300)


def test_tether_run_works_from_the_cli_with_only_the_key_set(server, wire, tmp_path) -> None:  # type: ignore[no-untyped-def]
    server.queue(wire.reply("Hello from Gemini"))
    out = cli(
        tmp_path,
        "run",
        "-m",
        "google/gemini-2.5-flash",
        "--tools",
        "",
        "Say hello",
        env={"GEMINI_API_KEY": wire.key, "GOOGLE_GEMINI_BASE_URL": server.url},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from Gemini"
    [sent] = server.requests
    assert sent.path.endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert sent.json()["contents"] == [{"role": "user", "parts": [{"text": "Say hello"}]}]


def test_tether_run_without_a_key_names_the_variables(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = cli(
        tmp_path,
        "run",
        "-m",
        "gemini-2.5-flash",
        "--tools",
        "",
        "Hi",
        env={"GOOGLE_GEMINI_BASE_URL": server.url},
    )
    assert out.returncode != 0
    assert "GEMINI_API_KEY" in out.stderr + out.stdout
    assert server.requests == []


def test_tether_models_lists_the_gemini_catalogue(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = cli(tmp_path, "models", env={})
    assert out.returncode == 0, out.stderr
    assert "gemini-2.5-flash" in out.stdout
    assert "gemini-3-pro-preview" in out.stdout
