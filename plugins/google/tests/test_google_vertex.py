"""Gemini on Vertex AI (``vertex/gemini-*``) through the real google-genai SDK and google-auth.

Two loopback servers stand in for Google: a fake OAuth token endpoint (the ``token_uri``
of an ``authorized_user`` ADC file) and a fake Vertex endpoint speaking
``streamGenerateContent`` SSE on the aiplatform path, which records each request's
Authorization header. The clock google-auth reads is moved forward during a tool call,
as in a run longer than a token's life.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tether
from tether import Agent
from tether.config import Config
from tether.errors import AuthenticationError, PermissionDeniedError
from tether.events import event_to_dict
from tether.resolve import parse_model_string
from tether.scrub import scrub
from tether_testing import FakeGoogleOAuth, FakeServer
from tether_testing.google_oauth import GoogleAuthClock, no_google_credentials

PROJECT = "proj-vertex-1"
LOCATION = "us-central1"
MODEL = "gemini-2.5-pro"
PATH = (
    f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/"
    f"{MODEL}:streamGenerateContent?alt=sse"
)


@pytest.fixture
def google_adc(
    google_oauth: FakeGoogleOAuth, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    return google_oauth.use_adc(tmp_path, monkeypatch)


def vertex_config(server: FakeServer, **settings: object) -> Config:
    section = {"project": PROJECT, "location": LOCATION, "base_url": server.url, "timeout": 30}
    return Config(providers={"vertex": {**section, **settings}})


async def test_the_token_expires_mid_run_and_the_next_request_carries_a_fresh_one(
    google_adc, google_oauth, server, wire, monkeypatch
):  # type: ignore[no-untyped-def]
    long_job = GoogleAuthClock(monkeypatch).long_job(3600)

    server.queue(
        wire.stream(wire.chunk(wire.function_call("long_job", {"step": 1}), finish="STOP")),
        wire.stream(wire.chunk(wire.function_call("long_job", {"step": 2}), finish="STOP")),
        wire.reply("Both steps are done."),
    )
    agent = Agent(f"vertex/{MODEL}", config=vertex_config(server), tools=[long_job])
    events = [event async for event in agent.stream("Run both steps.")]
    await agent.aclose()
    result = events[-1].result

    assert result.ok and result.output == "Both steps are done."
    assert result.messages[-1].meta.model == f"vertex/{MODEL}"
    assert [r.path for r in server.requests] == [PATH] * 3
    assert len(google_oauth.tokens) == 3
    assert google_oauth.scopes == ["https://www.googleapis.com/auth/cloud-platform"] * 3
    assert [r.headers["authorization"] for r in server.requests] == [
        f"Bearer {token}" for token in google_oauth.tokens
    ]
    sent = [r.json() for r in server.requests]
    assert [m["role"] for m in sent[2]["contents"]] == ["user", "model", "user", "model", "user"]
    shown = json.dumps([event_to_dict(e) for e in events], default=str)
    assert all(
        scrub(f"token {token}") == "token ***" for token in google_oauth.tokens
    )  # registered
    assert not [s for s in google_oauth.secrets if s in shown]


async def test_a_token_still_fresh_is_reused(google_adc, google_oauth, server, wire):  # type: ignore[no-untyped-def]
    server.queue(wire.reply("One."), wire.reply("Two."))
    agent = Agent(f"vertex/{MODEL}", config=vertex_config(server))
    assert (await agent.run("first")).output == "One."
    assert (await agent.run("second")).output == "Two."
    await agent.aclose()
    assert len(google_oauth.tokens) == 1
    assert {r.headers["authorization"] for r in server.requests} == {
        f"Bearer {google_oauth.tokens[0]}"
    }


async def test_project_and_location_come_from_the_environment(
    google_adc, google_oauth, server, wire, monkeypatch
):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("CLOUD_ML_REGION", LOCATION)
    server.queue(wire.reply("Hi."))
    config = Config(providers={"vertex": {"base_url": server.url}})
    assert (await Agent(f"vertex/{MODEL}", config=config).run("hi")).output == "Hi."
    assert server.requests[0].path == PATH


async def test_no_credentials_says_how_to_log_in(server, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    no_google_credentials(tmp_path, monkeypatch)
    agent = Agent(f"vertex/{MODEL}", config=vertex_config(server))
    with pytest.raises(AuthenticationError) as excinfo:
        await agent.provider().validate_auth()
    message = str(excinfo.value)
    assert "gcloud auth application-default login" in message
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message
    assert server.requests == []


async def test_no_project_names_the_config_key_and_the_variable(google_adc, server, monkeypatch):  # type: ignore[no-untyped-def]
    config = Config(providers={"vertex": {"base_url": server.url}})
    with pytest.raises(AuthenticationError) as excinfo:
        await Agent(f"vertex/{MODEL}", config=config).run("hi")
    assert "`project` in [providers.vertex]" in str(excinfo.value)
    assert "GOOGLE_CLOUD_PROJECT" in str(excinfo.value)
    assert server.requests == []


async def test_a_rejected_token_names_the_credentials_file_not_the_token(
    google_adc, google_oauth, server, wire
):  # type: ignore[no-untyped-def]
    server.queue(
        wire.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
    )
    with pytest.raises(AuthenticationError) as excinfo:
        await Agent(f"vertex/{MODEL}", config=vertex_config(server)).run("hi")
    error = excinfo.value
    assert error.provider == "vertex"
    assert "Vertex AI rejected the access token" in str(error)
    assert "the credentials file named by GOOGLE_APPLICATION_CREDENTIALS" in str(error)
    assert len(server.requests) == 1  # not retried
    assert not [s for s in google_oauth.secrets if s in str(error)]


async def test_a_403_names_the_project_and_the_role(google_adc, server, wire):  # type: ignore[no-untyped-def]
    server.queue(wire.error(403, "PERMISSION_DENIED", "Permission denied on resource project."))
    with pytest.raises(PermissionDeniedError) as excinfo:
        await Agent(f"vertex/{MODEL}", config=vertex_config(server)).run("hi")
    assert f"project {PROJECT} ({LOCATION})" in str(excinfo.value)
    assert "roles/aiplatform.user" in str(excinfo.value)


async def test_a_revoked_login_fails_the_refresh_with_advice(
    google_adc, google_oauth, server, wire
):  # type: ignore[no-untyped-def]
    google_oauth.reject = True
    with pytest.raises(AuthenticationError) as excinfo:
        await Agent(f"vertex/{MODEL}", config=vertex_config(server)).run("hi")
    message = str(excinfo.value)
    assert "Google refused to refresh the access token" in message
    assert "gcloud auth application-default login" in message
    assert not [s for s in google_oauth.secrets if s in message]
    assert server.requests == []


def test_vertex_gemini_models_resolve_and_claude_needs_the_anthropic_plugin() -> None:
    providers = tether.PluginManager().providers
    assert str(parse_model_string("vertex/gemini-2.5-pro", providers)) == "vertex/gemini-2.5-pro"
    with pytest.raises(
        tether.UnknownProviderError, match=r"uv pip install './plugins/anthropic\[vertex\]'"
    ):
        parse_model_string("vertex/claude-sonnet-4-5@20250929", providers)
    with pytest.raises(tether.UnknownProviderError, match=r"Known families: claude-\*"):
        parse_model_string("vertex/llama-4-maverick", providers)


def test_the_catalogue_has_vertex_prices() -> None:
    provider = tether.PluginManager().providers.get("vertex")(Config().provider("vertex"))
    models = {m.id: m for m in provider.catalogue()}
    assert models["gemini-2.5-pro"].capabilities.pricing.input == 1.25
    assert models["gemini-2.0-flash"].capabilities.pricing.input == 0.15
    assert provider.capabilities("gemini-2.5-flash-001").thinking


async def test_no_token_or_key_reaches_a_log_record_even_at_debug_level(
    google_adc, google_oauth, server, wire, caplog
):  # type: ignore[no-untyped-def]
    import logging

    caplog.set_level(logging.DEBUG)
    server.queue(wire.reply("Hi."))
    agent = Agent(f"vertex/{MODEL}", config=vertex_config(server))
    assert (await agent.run("hi")).output == "Hi."
    await agent.aclose()
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "/token" in logged or "POST" in logged  # the loggers did run
    assert google_oauth.tokens and not [s for s in google_oauth.secrets if s in logged]
