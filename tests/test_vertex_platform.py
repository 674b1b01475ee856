"""The ``vertex`` platform with both families installed: tether-google serves
``vertex/gemini-*`` and tether-anthropic ``vertex/claude-*``, from one ``[providers.vertex]``
table and one set of Application Default Credentials, through the real SDKs over loopback
(a fake Google token endpoint and a fake Vertex endpoint answering both wire formats)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import tether
from tether import Agent
from tether.config import Config
from tether.config_check import check_plugin_settings
from tether.errors import ConfigError
from tether.events import event_to_dict
from tether.plugins import PluginManager
from tether_cli import CliState, cli
from tether_testing import (
    FakeGoogleOAuth,
    FakeResponse,
    FakeServer,
    anthropic_reply,
    anthropic_text,
    gemini_part,
    gemini_reply,
)
from tether_testing.http import RecordedRequest

PROJECT = "proj-both"
LOCATION = "europe-west1"
GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-haiku-4-5@20251001"


def answer(request: RecordedRequest) -> FakeResponse:
    """Vertex AI: Google's and Anthropic's publishers, each in its own wire format."""
    prefix = f"/projects/{PROJECT}/locations/{LOCATION}/publishers/"
    if request.path.startswith(f"/v1beta1{prefix}google/models/{GEMINI}:streamGenerateContent"):
        return gemini_reply(GEMINI, [gemini_part(text="Gemini here.")])
    if request.path == f"/v1{prefix}anthropic/models/{CLAUDE}:streamRawPredict":
        return anthropic_reply(CLAUDE, anthropic_text(0, "Claude here."), stop_reason="end_turn")
    return FakeResponse.json({"error": {"code": 404, "message": "Not found"}}, status=404)


@pytest.fixture
def vertex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FakeServer, FakeGoogleOAuth]]:
    with FakeGoogleOAuth() as oauth, FakeServer(answer) as server:
        oauth.use_adc(tmp_path, monkeypatch)
        monkeypatch.setenv("TETHER_PLUGINS_ALLOW", "google,anthropic")
        yield server, oauth


def config(server: FakeServer) -> Config:
    section = {
        "project": PROJECT,
        "location": LOCATION,
        "base_url": server.url,
        "seed": 7,  # a Gemini setting
        "prompt_caching": False,  # a Claude setting
    }
    return Config(providers={"vertex": section})


async def test_one_table_and_one_login_serve_both_families(vertex) -> None:  # type: ignore[no-untyped-def]
    server, oauth = vertex
    settings = config(server)
    check_plugin_settings(settings, PluginManager(config=settings))
    events = []
    for model, expected in ((GEMINI, "Gemini here."), (CLAUDE, "Claude here.")):
        agent = Agent(f"vertex/{model}", config=settings)
        events += [event async for event in agent.stream("Who is there?")]
        await agent.aclose()
        assert events[-1].result.output == expected
        assert events[-1].result.messages[-1].meta.model == f"vertex/{model}"
    gemini_body, claude_body = (r.json() for r in server.requests)
    assert gemini_body["generationConfig"]["seed"] == 7
    assert "cache_control" not in json.dumps(claude_body)
    assert [r.headers["authorization"].split()[0] for r in server.requests] == ["Bearer"] * 2
    shown = json.dumps([event_to_dict(e) for e in events], default=str)
    assert oauth.tokens and not [t for t in oauth.tokens if t in shown]


def test_a_key_no_family_reads_is_still_a_configuration_error(vertex) -> None:  # type: ignore[no-untyped-def]
    settings = Config(providers={"vertex": {"project": PROJECT, "promt_caching": True}})
    with pytest.raises(ConfigError, match="promt_caching"):
        check_plugin_settings(settings, PluginManager(config=settings))


def test_tether_models_and_plugins_list_the_platform_once_with_both_families(vertex) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    listing = runner.invoke(cli, ["models", "vertex", "--json"], obj=CliState())
    assert listing.exit_code == 0, listing.output
    report = json.loads(listing.output)
    [platform] = report["providers"]
    ids = {m["id"] for m in platform["models"]}
    assert {"gemini-2.5-pro", "claude-sonnet-4-5@20250929"} <= ids
    assert platform["distribution"] == "tether-anthropic, tether-google"
    plugins = runner.invoke(cli, ["plugins", "--json"], obj=CliState())
    providers = json.loads(plugins.output)["components"]["provider"]
    assert [p["name"] for p in providers].count("vertex") == 1


def test_the_model_string_goes_to_the_right_family() -> None:
    providers = PluginManager().providers
    platform = providers.platform("vertex")
    assert platform is not None
    assert platform.family_for("claude-opus-4-6").distribution == "tether-anthropic"
    assert platform.family_for("gemini-3-pro-preview").distribution == "tether-google"
    with pytest.raises(tether.UnknownProviderError, match="Known families"):
        platform.family_for("mistral-large")
