"""pytest fixtures for testing agents and tool plugins (registered via ``pytest11``).

::

    async def test_weather_tool(call_tool):
        result = await call_tool(get_weather, {"city": "Lisbon"})
        assert not result.is_error

    async def test_agent_uses_weather(make_agent):
        agent, provider = make_agent(
            [Reply(tool_calls=[call("get_weather", city="Lisbon")]), Reply(text="Sunny.")],
            tools=[get_weather],
        )
        result = await agent.run("Weather in Lisbon?")
        assert result.output == "Sunny."
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tether.testing.scripted import Reply, ScriptedProvider
from tether.testing.tools import call_tool as _call_tool
from tether.testing.tools import make_tool_context


@pytest.fixture(autouse=True)
def _tether_run_log_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Runs made by tests are not recorded in the user's run log. A test that wants them
    recorded sets ``TETHER_RUN_LOG`` to a file of its own."""
    if "TETHER_RUN_LOG" not in os.environ:
        monkeypatch.setenv("TETHER_RUN_LOG", "off")
    yield


@pytest.fixture
def scripted_provider() -> ScriptedProvider:
    """An empty :class:`ScriptedProvider`; add replies with ``.queue(...)``."""
    return ScriptedProvider()


@pytest.fixture
def make_agent(tmp_path: Path) -> Callable[..., tuple[Any, ScriptedProvider]]:
    """``make_agent(replies, tools=[...], **agent_kwargs) -> (agent, provider)``.

    The agent runs in ``tmp_path``, reads no configuration file and loads no plugins
    from entry points (only tether's built-ins and any ``plugins=[...]`` you pass), so
    tests are isolated. Pass ``entry_points=True`` or a ``plugin_manager=`` to change that.
    """
    from tether.agent import Agent
    from tether.config import Config

    def factory(
        replies: Iterable[Reply | Any] = (), *, tools: Sequence[Any] = (), **kwargs: Any
    ) -> tuple[Agent, ScriptedProvider]:
        provider = ScriptedProvider(replies)
        kwargs.setdefault("config", Config())
        kwargs.setdefault("cwd", tmp_path)
        if "plugin_manager" not in kwargs:
            kwargs.setdefault("entry_points", False)
        return Agent(provider, tools=list(tools), **kwargs), provider

    return factory


@pytest.fixture
def tool_context(tmp_path: Path) -> Any:
    """A :class:`~tether.tools.ToolContext` rooted at ``tmp_path``."""
    return make_tool_context(cwd=tmp_path)


@pytest.fixture
def call_tool(tmp_path: Path) -> Callable[..., Any]:
    """``await call_tool(tool, arguments, **options)``: run a tool as the runner would,
    in ``tmp_path``; returns the tool result the model would see."""

    async def invoke(tool: Any, arguments: Any, **options: Any) -> Any:
        options.setdefault("cwd", tmp_path)
        return await _call_tool(tool, arguments, **options)

    return invoke


@pytest.fixture
def sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A :class:`~tether_testing.sandbox.Sandbox` for tests that hand hostile input to real
    executors: a fake ``HOME`` (with a sentinel file checked at the end), a temporary
    working directory, and name resolution and connections that only reach loopback. The
    test fails before it runs if ``HOME`` is still the real home directory."""
    from .sandbox import sandbox_fixture

    yield from sandbox_fixture(monkeypatch, tmp_path_factory)


@pytest.fixture
def fake_server() -> Any:
    """A :class:`~tether_testing.http.FakeServer` on loopback, started and closed for you."""
    from .http import FakeServer

    with FakeServer() as server:
        yield server


@pytest.fixture
def offline(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., None]:
    """:func:`tether.testing.offline.go_offline` for this test, ready to call (usually
    from an autouse fixture of a conftest): ``offline(plugins=("google",))``. A test
    marked ``live`` keeps its real keys; only the plugin choice applies to it."""
    from tether.testing.offline import go_offline

    def isolate(
        *, plugins: Iterable[str] | None = None, unset: Iterable[str] = (), config: bool = True
    ) -> None:
        directory = tmp_path_factory.mktemp("offline") if config else None
        live = request.node.get_closest_marker("live") is not None
        go_offline(monkeypatch, directory, plugins=plugins, unset=unset, live=live)

    return isolate


@pytest.fixture
def google_oauth() -> Any:
    """A :class:`~tether_testing.google_oauth.FakeGoogleOAuth` token endpoint on loopback,
    started and closed for you (needs google-auth's ``cryptography``)."""
    from .google_oauth import FakeGoogleOAuth

    with FakeGoogleOAuth() as oauth:
        yield oauth


@pytest.fixture
def google_adc(google_oauth: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A key file of ``google_oauth`` as the Application Default Credentials, with no
    project or location in the environment (:meth:`FakeGoogleOAuth.use_adc`); undone
    after the test."""
    path: Path = google_oauth.use_adc(tmp_path, monkeypatch)
    return path
