"""Registration: providers, prefixes, catalogue, embedder, entry point; and auth checks."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from tether.config import ProviderConfig
from tether.errors import AuthenticationError
from tether.plugins import PluginManager
from tether.resolve import parse_model_string
from tether_openai import plugin
from tether_testing.http import FakeResponse, FakeServer


def manager() -> PluginManager:
    return PluginManager(plugins=[plugin], entry_points=False)


def test_entry_point_names_the_plugin_module() -> None:
    points = {ep.name: ep.value for ep in metadata.entry_points(group="tether")}
    assert points.get("openai") == "tether_openai.plugin"


def test_providers_and_prefixes_are_registered() -> None:
    providers = manager().providers
    for name in ("openai", "ollama", "vllm", "lmstudio", "llamacpp", "openrouter"):
        assert name in providers
    for bare in ("gpt-5.4-mini", "o3", "o4-mini", "chatgpt-4o-latest", "codex-mini-latest"):
        assert parse_model_string(bare, providers).provider == "openai"


def test_factories_work_without_a_key_so_the_catalogue_can_be_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = manager().providers.get("openai")(ProviderConfig())
    ids = [m.id for m in provider.catalogue()]
    assert "gpt-5.4" in ids and "gpt-4.1" in ids
    info = next(m for m in provider.catalogue() if m.id == "gpt-5.4-mini")
    assert (
        info.capabilities.pricing is not None and info.capabilities.pricing.cache_read is not None
    )


def test_capabilities_of_snapshots_and_config_overrides() -> None:
    factory = manager().providers.get("openai")
    provider = factory(
        ProviderConfig(
            models={"gpt-4.1": {"context_window": 5000}, "my-finetune": {"thinking": True}}
        )
    )
    assert provider.capabilities("gpt-4.1-mini-2025-04-14").context_window == 1_047_576
    assert provider.capabilities("gpt-4.1").context_window == 5000
    assert "my-finetune" in [m.id for m in provider.catalogue()]
    assert provider.capabilities("gpt-5.4").thinking is True


def test_embedder_is_registered() -> None:
    embedders = manager().embedders
    embedder = embedders.get("openai")(model="text-embedding-3-large", dimensions=256)
    assert embedder.dimensions == 256
    assert embedder.name == "openai/text-embedding-3-large@256"


def test_importing_the_plugin_does_not_import_the_sdk() -> None:
    code = "import sys, tether_openai.plugin; print('openai' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


async def test_validate_auth_sends_nothing_when_a_key_is_set(fake_server: FakeServer) -> None:
    provider = manager().providers.get("openai")(
        ProviderConfig(base_url=fake_server.url + "/v1", api_key="sk-good")
    )
    await provider.validate_auth()
    await provider.aclose()
    assert fake_server.requests == []


async def test_verify_key_accepts_a_working_key(fake_server: FakeServer) -> None:
    fake_server.queue(
        FakeResponse.json(
            {
                "object": "list",
                "data": [{"id": "gpt-4.1", "object": "model", "created": 1, "owned_by": "system"}],
            }
        )
    )
    provider = manager().providers.get("openai")(
        ProviderConfig(base_url=fake_server.url + "/v1", api_key="sk-good")
    )
    await provider.verify_key()
    assert fake_server.requests[0].path == "/v1/models"
    assert fake_server.requests[0].headers["authorization"] == "Bearer sk-good"


async def test_verify_key_reports_a_rejected_key(fake_server: FakeServer) -> None:
    body = {
        "error": {
            "message": "Incorrect API key provided: sk-bad.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    fake_server.queue(FakeResponse.json(body, status=401))
    config = ProviderConfig(
        base_url=fake_server.url + "/v1", api_key="sk-bad", api_key_env="MY_OPENAI_KEY"
    )
    provider = manager().providers.get("openai")(config)
    with pytest.raises(AuthenticationError, match="MY_OPENAI_KEY") as info:
        await provider.verify_key()
    assert "sk-bad" not in str(info.value)


def test_repr_never_shows_the_key() -> None:
    provider = manager().providers.get("openai")(ProviderConfig(api_key="sk-secret-value"))
    assert "sk-secret-value" not in repr(provider)


async def test_a_server_that_is_not_an_openai_api_gives_a_provider_error(
    fake_server: FakeServer,
) -> None:
    from tether.errors import ProviderError

    fake_server.queue(
        FakeResponse(
            status=200, headers={"content-type": "text/html"}, body=b"<html>router login</html>"
        )
    )
    provider = manager().providers.get("ollama")(ProviderConfig(base_url=fake_server.url + "/v1"))
    with pytest.raises(ProviderError, match="OpenAI-compatible"):
        await provider.verify_key()


async def test_the_sdks_base_url_variable_is_honoured(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.messages import Message
    from tether.provider import ModelRequest

    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url + "/gateway/v1")
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1"}
    fake_server.queue(
        FakeResponse.sse(
            [
                (
                    None,
                    {
                        **chunk,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": "via gateway"},
                                "finish_reason": "stop",
                            }
                        ],
                    },
                ),
                (None, "[DONE]"),
            ]
        )
    )
    provider = manager().providers.get("openai")(ProviderConfig(api_key="sk-k"))
    events = [
        e
        async for e in provider.stream(ModelRequest(model="gpt-4.1", messages=[Message.user("x")]))
    ]
    assert events[-1].message.text == "via gateway"
    assert fake_server.requests[0].path == "/gateway/v1/chat/completions"
