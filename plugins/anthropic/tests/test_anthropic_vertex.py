"""Claude on Vertex AI (``vertex/claude-*``) through the SDK's real ``AsyncAnthropicVertex``.

Two loopback servers stand in for Google: a fake OAuth token endpoint (the ``token_uri``
of a service-account key file made for the test) and a fake Vertex endpoint answering
``:streamRawPredict`` with the Messages API's SSE stream, which records each request's
Authorization header. The clock google-auth reads is moved forward during a tool call,
as in a run longer than a token's life.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import tether
import tether_anthropic.plugin
from tether import Agent
from tether.config import Config, ProviderConfig
from tether.errors import AuthenticationError, PermissionDeniedError
from tether.events import event_to_dict
from tether.plugins import PluginManager
from tether.resolve import parse_model_string
from tether.scrub import scrub
from tether_testing import (
    FakeResponse,
    FakeServer,
    anthropic_reply,
    anthropic_text,
    anthropic_tool_use,
)
from tether_testing.google_oauth import GoogleAuthClock, no_google_credentials

PROJECT = "proj-claude-1"
LOCATION = "us-east5"
MODEL = "claude-sonnet-4-5@20250929"
PATH = (
    f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/anthropic/models/"
    f"{MODEL}:streamRawPredict"
)


@pytest.fixture(autouse=True)
def no_anthropic_vertex_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's own Vertex variables would name another project or endpoint."""
    monkeypatch.delenv("ANTHROPIC_VERTEX_PROJECT_ID", raising=False)
    monkeypatch.delenv("ANTHROPIC_VERTEX_BASE_URL", raising=False)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def vertex_agent(server: FakeServer, model: str = MODEL, **kwargs: object) -> Agent:
    section = {
        "project": PROJECT,
        "location": LOCATION,
        "base_url": server.url,
        "timeout": 30,
    }
    config = Config(providers={"vertex": section})
    return Agent(f"vertex/{model}", config=config, plugins=[tether_anthropic.plugin], **kwargs)  # type: ignore[arg-type]


def tool_reply(step: int) -> FakeResponse:
    return anthropic_reply(
        MODEL,
        anthropic_tool_use(0, f"toolu_{step}", "long_job", {"step": step}),
        stop_reason="tool_use",
    )


def text_reply(text: str) -> FakeResponse:
    return anthropic_reply(MODEL, anthropic_text(0, text), stop_reason="end_turn")


def error(status: int, kind: str, message: str) -> FakeResponse:
    return FakeResponse.json(
        {"type": "error", "error": {"type": kind, "message": message}}, status=status
    )


async def test_the_token_expires_mid_run_and_the_next_request_carries_a_fresh_one(
    google_adc, google_oauth, server, monkeypatch
):  # type: ignore[no-untyped-def]
    long_job = GoogleAuthClock(monkeypatch).long_job(3600)

    server.queue(tool_reply(1), tool_reply(2), text_reply("Both steps are done."))
    agent = vertex_agent(server, tools=[long_job])
    events = [event async for event in agent.stream("Run both steps.")]
    await agent.aclose()
    result = events[-1].result

    assert result.ok and result.output == "Both steps are done."
    assert result.messages[-1].meta.model == f"vertex/{MODEL}"
    assert [r.path for r in server.requests] == [PATH] * 3
    assert len(google_oauth.tokens) == 3
    assert [r.headers["authorization"] for r in server.requests] == [
        f"Bearer {token}" for token in google_oauth.tokens
    ]
    body = server.requests[2].json()
    assert body["anthropic_version"] and "model" not in body  # the model is in the URL
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    shown = json.dumps([event_to_dict(e) for e in events], default=str)
    assert all(
        scrub(f"token {token}") == "token ***" for token in google_oauth.tokens
    )  # registered
    assert not [s for s in google_oauth.secrets if s in shown]


async def test_a_token_still_fresh_is_reused(google_adc, google_oauth, server):  # type: ignore[no-untyped-def]
    server.queue(text_reply("One."), text_reply("Two."))
    agent = vertex_agent(server)
    assert (await agent.run("first")).output == "One."
    assert (await agent.run("second")).output == "Two."
    await agent.aclose()
    assert len(google_oauth.tokens) == 1
    assert {r.headers["authorization"] for r in server.requests} == {
        f"Bearer {google_oauth.tokens[0]}"
    }


async def test_no_credentials_says_how_to_log_in(server, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    no_google_credentials(tmp_path, monkeypatch)
    agent = vertex_agent(server)
    with pytest.raises(AuthenticationError) as excinfo:
        await agent.provider().validate_auth()
    assert "gcloud auth application-default login" in str(excinfo.value)
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(excinfo.value)
    with pytest.raises(AuthenticationError, match="gcloud auth application-default login"):
        await agent.run("hi")
    assert server.requests == []


async def test_no_project_names_the_config_key_and_the_variable(google_adc, server):  # type: ignore[no-untyped-def]
    config = Config(providers={"vertex": {"base_url": server.url}})
    agent = Agent(f"vertex/{MODEL}", config=config, plugins=[tether_anthropic.plugin])
    with pytest.raises(AuthenticationError) as excinfo:
        await agent.run("hi")
    assert "`project` in [providers.vertex]" in str(excinfo.value)
    assert "GOOGLE_CLOUD_PROJECT" in str(excinfo.value)
    assert server.requests == []


async def test_a_rejected_token_names_the_credentials_not_the_token(
    google_adc, google_oauth, server
):  # type: ignore[no-untyped-def]
    server.queue(error(401, "authentication_error", "invalid authentication credentials"))
    with pytest.raises(AuthenticationError) as excinfo:
        await vertex_agent(server).run("hi")
    message = str(excinfo.value)
    assert excinfo.value.provider == "vertex"
    assert "Vertex AI rejected the access token" in message
    assert "the credentials file named by GOOGLE_APPLICATION_CREDENTIALS" in message
    assert "ANTHROPIC_API_KEY" not in message
    assert len(server.requests) == 1
    assert not [s for s in google_oauth.secrets if s in message]


async def test_a_403_names_the_project_and_the_role(google_adc, server):  # type: ignore[no-untyped-def]
    server.queue(error(403, "permission_error", "Permission denied on resource project."))
    with pytest.raises(PermissionDeniedError) as excinfo:
        await vertex_agent(server).run("hi")
    assert f"project {PROJECT} ({LOCATION})" in str(excinfo.value)
    assert "roles/aiplatform.user" in str(excinfo.value)


async def test_a_revoked_key_fails_the_refresh_with_advice(google_adc, google_oauth, server):  # type: ignore[no-untyped-def]
    google_oauth.reject = True
    with pytest.raises(AuthenticationError) as excinfo:
        await vertex_agent(server).run("hi")
    message = str(excinfo.value)
    assert "Google refused to refresh the access token" in message
    assert not [s for s in google_oauth.secrets if s in message]
    assert server.requests == []


def test_vertex_claude_models_resolve_and_gemini_needs_the_google_plugin() -> None:
    providers = PluginManager(plugins=[tether_anthropic.plugin], entry_points=False).providers
    ref = parse_model_string("vertex/claude-sonnet-4-5@20250929", providers)
    assert (ref.provider, ref.model) == ("vertex", "claude-sonnet-4-5@20250929")
    with pytest.raises(tether.UnknownProviderError, match=r"uv pip install \./plugins/google"):
        parse_model_string("vertex/gemini-2.5-pro", providers)


def test_the_catalogue_has_vertex_ids_and_the_regional_premium() -> None:
    from tether_anthropic.vertex import VertexClaudeProvider

    regional = VertexClaudeProvider(
        Config(providers={"vertex": {"location": "us-east5"}}).provider("vertex")
    )
    global_ = VertexClaudeProvider(
        Config(providers={"vertex": {"location": "global"}}).provider("vertex")
    )
    pricing = regional.capabilities(MODEL).pricing
    assert pricing is not None and pricing.input == pytest.approx(3.3)
    assert global_.capabilities(MODEL).pricing.input == 3  # type: ignore[union-attr]
    assert global_.capabilities(MODEL).context_window == 200_000
    assert "claude-haiku-4-5@20251001" in {m.id for m in global_.catalogue()}


async def test_no_token_or_key_reaches_a_log_record_even_at_debug_level(
    google_adc, google_oauth, server, caplog
):  # type: ignore[no-untyped-def]
    import logging

    caplog.set_level(logging.DEBUG)
    server.queue(text_reply("Hi."))
    agent = vertex_agent(server)
    assert (await agent.run("hi")).output == "Hi."
    await agent.aclose()
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "streamRawPredict" in logged  # the loggers did run
    assert google_oauth.tokens and not [s for s in google_oauth.secrets if s in logged]


async def test_verify_key_refreshes_the_token_and_reports_a_refused_one(
    google_adc, google_oauth, server
):  # type: ignore[no-untyped-def]
    from tether_anthropic.vertex import VertexClaudeProvider

    provider = VertexClaudeProvider(
        Config(providers={"vertex": {"project": PROJECT, "base_url": server.url}}).provider(
            "vertex"
        )
    )
    await provider.verify_key()
    assert len(google_oauth.tokens) == 1
    assert google_oauth.tokens[0] not in repr(provider) and PROJECT in repr(provider)
    google_oauth.reject = True
    with pytest.raises(AuthenticationError, match="Google refused to refresh"):
        await provider.verify_key()
    await provider.aclose()
    assert server.requests == []


async def test_without_google_auth_the_error_names_the_extra_to_install(server, monkeypatch):  # type: ignore[no-untyped-def]
    import sys

    monkeypatch.setitem(sys.modules, "google.auth", None)  # as if not installed
    with pytest.raises(tether.ConfigError, match=r"uv pip install './plugins/anthropic\[vertex\]'"):
        await vertex_agent(server).provider().validate_auth()


def test_without_the_vertex_extra_a_vertex_model_names_the_extra_to_install(monkeypatch):  # type: ignore[no-untyped-def]
    import sys

    monkeypatch.setitem(sys.modules, "tether_google_auth", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "tether_anthropic.vertex", raising=False)
    with pytest.raises(tether.ConfigError, match=r"uv pip install './plugins/anthropic\[vertex\]'"):
        tether_anthropic.plugin.make_vertex_provider(ProviderConfig())
