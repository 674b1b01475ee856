"""Plugin discovery and isolation, with in-process plugins and a real installed distribution."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.config import Config
from tether.errors import DuplicateComponentError, UnknownProviderError
from tether.events import ToolStart
from tether.observe import current_run
from tether.plugins import PluginManager
from tether.registry import CompactionStrategyRegistrar, StrategyRegistrar
from tether.resolve import parse_model_string
from tether.testing import Reply, ScriptedProvider, call


def plugin_module(name: str, **hooks: object) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, tether.hookimpl(function))  # type: ignore[arg-type]
    return module


@tether.tool
def shout(text: str) -> str:
    """Upper-case text."""
    return text.upper()


def test_a_plugin_whose_hook_raises_is_reported_and_the_others_still_register() -> None:
    def good(tools):  # type: ignore[no-untyped-def]
        tools.add(shout)

    def bad(tools):  # type: ignore[no-untyped-def]
        tools.add(tether.Toolset("half", [shout]))
        raise RuntimeError("broken plugin")

    manager = PluginManager(
        plugins=[
            plugin_module("good_plugin", register_tools=good),
            plugin_module("bad_plugin", register_tools=bad),
        ],
        entry_points=False,
    )
    assert (
        "shout" in manager.tools and "half" not in manager.tools
    )  # the broken hook's part is discarded
    assert manager.tools.registration("shout").source.plugin == "good_plugin"
    assert (
        len(manager.errors) == 1
        and "bad_plugin" in str(manager.errors[0])
        and "broken plugin" in str(manager.errors[0])
    )
    info = {p.name: p for p in manager.plugins}
    assert info["bad_plugin"].error is not None and info["good_plugin"].error is None
    assert info["good_plugin"].hooks == ["register_tools"]


def test_two_plugins_registering_one_name_is_an_error_naming_both() -> None:
    def first(providers):  # type: ignore[no-untyped-def]
        providers.add("acme", lambda config: ScriptedProvider())

    manager = PluginManager(
        plugins=[
            plugin_module("acme_one", register_providers=first),
            plugin_module("acme_two", register_providers=first),
        ],
        entry_points=False,
    )
    with pytest.raises(DuplicateComponentError) as excinfo:
        manager.providers.get("acme")
    message = str(excinfo.value)
    assert 'provider named "acme"' in message and message.count("(in-process)") == 2


def test_model_strings_resolve_by_name_prefix_and_alias() -> None:
    def register(providers):  # type: ignore[no-untyped-def]
        providers.add("anthropic", lambda c: ScriptedProvider(), prefixes=("claude-",))
        providers.add("openai", lambda c: ScriptedProvider(), prefixes=("gpt-", "o3"))
        providers.add("openrouter", lambda c: ScriptedProvider())

    registry = PluginManager(
        plugins=[plugin_module("p", register_providers=register)], entry_points=False
    ).providers
    assert str(parse_model_string("anthropic/claude-x", registry)) == "anthropic/claude-x"
    assert str(parse_model_string("claude-sonnet-4-5", registry)) == "anthropic/claude-sonnet-4-5"
    assert str(parse_model_string("o3-mini", registry)) == "openai/o3-mini"
    assert str(parse_model_string("openrouter/meta/llama-3", registry)) == "openrouter/meta/llama-3"
    assert (
        str(parse_model_string("fast", registry, {"fast": "openai/gpt-4.1-mini"}))
        == "openai/gpt-4.1-mini"
    )
    with pytest.raises(UnknownProviderError) as excinfo:
        parse_model_string("antropic/claude-x", registry)
    assert str(excinfo.value) == (
        'No provider named "antropic". Did you mean "anthropic"? Installed: anthropic, demo, '
        "openai, openrouter."
    )
    assert excinfo.value.near == ["anthropic"] and excinfo.value.kind == "provider"
    with pytest.raises(UnknownProviderError, match='Write it as "provider/mystery-model"'):
        parse_model_string("mystery-model", registry)


def test_agent_reports_an_unknown_tool_name_with_near_matches() -> None:
    def register(tools):  # type: ignore[no-untyped-def]
        tools.add(shout)

    agent = tether.Agent(
        ScriptedProvider(),
        tools=["shoot"],
        config=Config(),
        plugins=[plugin_module("t", register_tools=register)],
    )
    with pytest.raises(
        tether.errors.UnknownComponentError,
        match=r'No tool or toolset named "shoot"\. Did you mean "shout"\?',
    ):
        agent.tools()


def test_allow_and_deny_lists_filter_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    everything = {p.name for p in PluginManager().plugins}
    builtins = ["compaction", "demo", "sessions", "strategies"]
    monkeypatch.setenv("TETHER_PLUGINS_DENY", ",".join(everything - set(builtins)))
    assert [p.name for p in PluginManager().plugins] == builtins
    monkeypatch.delenv("TETHER_PLUGINS_DENY")
    monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert [p.name for p in PluginManager().plugins] == builtins


def test_a_built_in_plugin_is_denied_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each built-in feature is a named plugin, left out like any other when denied."""
    monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert "demo" in PluginManager().providers.names()
    monkeypatch.setenv("TETHER_PLUGINS_DENY", "demo,strategies")
    manager = PluginManager()
    assert [p.name for p in manager.plugins] == ["compaction", "sessions"]
    assert "demo" not in manager.providers.names()
    assert list(manager.registrar(StrategyRegistrar).names()) == []
    assert "truncate" in manager.registrar(CompactionStrategyRegistrar).names()


# -- a real third-party distribution -----------------------------------------------------------
WEATHER_PYPROJECT = """
[project]
name = "tether-weather-example"
version = "1.2.3"
requires-python = ">=3.11"

[project.entry-points.tether]
weather = "tether_weather_example"
broken = "tether_weather_broken"

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["tether_weather_example", "tether_weather_broken"]
"""

WEATHER_MODULE = '''
import tether


@tether.tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


@tether.hookimpl
def register_tools(tools):
    tools.add(get_weather)
'''


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build and install a third-party plugin distribution from its pyproject.toml into a
    target directory, as pip would into site-packages."""
    source = tmp_path_factory.mktemp("plugin-src")
    (source / "pyproject.toml").write_text(WEATHER_PYPROJECT)
    (source / "tether_weather_example").mkdir()
    (source / "tether_weather_example" / "__init__.py").write_text(WEATHER_MODULE)
    (source / "tether_weather_broken").mkdir()
    (source / "tether_weather_broken" / "__init__.py").write_text(
        "raise ImportError('this plugin is broken')\n"
    )
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "uv",
            "pip",
            "install",
            "--quiet",
            "--offline",
            "--no-deps",
            "--no-build-isolation",
            "--python",
            sys.executable,
            "--target",
            str(target),
            str(source),
        ],
        check=True,
    )
    return target


@pytest.fixture
def on_path(installed_plugin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(installed_plugin))
    monkeypatch.setenv("PYTHONPATH", str(installed_plugin))
    return installed_plugin


async def test_an_installed_plugin_is_discovered_and_its_tool_called_by_the_model(
    on_path: Path,
) -> None:
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("get_weather", city="Oslo")]), Reply(text="It is sunny.")]
    )
    agent = tether.Agent(provider, tools=["get_weather"], config=Config())
    result = await agent.run("Weather in Oslo?")
    assert result.output == "It is sunny."
    assert result.messages[2].tool_results[0].text == "Sunny in Oslo"
    broken = [e for e in agent.plugins.errors if e.plugin == "broken"]
    assert (
        broken
        and broken[0].distribution == "tether-weather-example"
        and "this plugin is broken" in str(broken[0])
    )


def test_tether_plugins_lists_the_plugin_and_the_broken_one(on_path: Path) -> None:
    script = Path(sys.executable).with_name("tether")
    out = subprocess.run([str(script), "plugins"], capture_output=True, text=True, check=False)
    text = out.stdout + out.stderr
    assert "tether-weather-example" in text and "1.2.3" in text
    assert "get_weather" in text
    assert "this plugin is broken" in text


async def test_a_duplicate_tool_name_from_two_distributions_names_both(on_path: Path) -> None:
    def register(tools):  # type: ignore[no-untyped-def]
        tools.add(tether.tool(name="get_weather")(lambda city: city))

    agent = tether.Agent(
        ScriptedProvider(),
        tools=["get_weather"],
        config=Config(),
        plugins=[plugin_module("dupe", register_tools=register)],
    )
    with pytest.raises(DuplicateComponentError) as excinfo:
        agent.tools()
    assert "tether-weather-example" in str(excinfo.value) and "(in-process)" in str(excinfo.value)


def test_import_tether_loads_no_plugins_or_heavy_libraries() -> None:
    code = textwrap.dedent(
        """
        import sys, tether
        heavy = [m for m in ("numpy", "anthropic", "openai", "google.genai", "chromadb", "httpx", "pydantic") if m in sys.modules]
        print(",".join(heavy))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


async def test_event_observers_see_every_event_and_cannot_break_a_run() -> None:
    seen: list[str] = []

    def register(observers):  # type: ignore[no-untyped-def]
        observers.add("recorder", lambda event: seen.append(type(event).__name__))
        observers.add("broken", lambda event: 1 / 0)

    provider = ScriptedProvider([Reply(tool_calls=[call("shout", text="hi")]), Reply(text="HI")])
    agent = tether.Agent(
        provider,
        tools=[shout],
        config=Config(),
        plugins=[plugin_module("obs", register_observers=register)],
    )
    result = await agent.run("x")
    assert result.ok
    assert seen == ["RunStart", "TurnEnd", "ToolStart", "ToolEnd", "TextDelta", "TurnEnd", "Done"]


def observed_agent(observer: object, provider: ScriptedProvider, tools: list[Any]) -> tether.Agent:
    """An agent whose one plugin registers ``observer``."""
    return tether.Agent(
        provider,
        tools=tools,
        config=Config(),
        plugins=[
            plugin_module(
                "obs", register_observers=lambda observers: observers.add("observer", observer)
            )
        ],
    )


class FlakyObserver:
    """An observer object (its ``__call__`` is what the core calls) that records which
    run each event belongs to and fails on tool calls."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def __call__(self, event: object) -> None:
        run = current_run()
        self.seen.append((type(event).__name__, run.run_id if run is not None else None))
        if isinstance(event, ToolStart):
            raise RuntimeError("observer bug")


async def test_a_lone_observer_object_sees_its_runs_events_and_its_errors_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    observer = FlakyObserver()
    provider = ScriptedProvider([Reply(tool_calls=[call("shout", text="hi")]), Reply(text="HI")])
    agent = observed_agent(observer, provider, [shout])
    with caplog.at_level("ERROR", logger="tether.observers"):
        result = await agent.run("x")
    assert result.ok and current_run() is None
    assert observer.seen == [
        (name, result.run_id)
        for name in ("RunStart", "TurnEnd", "ToolStart", "ToolEnd", "TextDelta", "TurnEnd", "Done")
    ]
    (record,) = caplog.records
    assert "FlakyObserver" in record.getMessage() and record.exc_info is not None


async def test_observers_learn_that_a_run_was_abandoned_by_its_consumer() -> None:
    seen: list[object] = []
    provider = ScriptedProvider([Reply(tool_calls=[call("shout", text="hi")]), Reply(text="HI")])
    agent = observed_agent(seen.append, provider, [shout])
    stream = agent.stream("x")
    async for event in stream:
        if isinstance(event, ToolStart):
            break
    await stream.aclose()
    assert [type(e).__name__ for e in seen] == ["RunStart", "TurnEnd", "ToolStart", "RunAborted"]


async def test_a_tool_scope_that_raises_is_logged_and_the_tool_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class BrokenScope:
        def __call__(self, event: object) -> None:
            pass

        def tool_scope(self, call: object) -> None:
            raise RuntimeError("scope bug")

    provider = ScriptedProvider([Reply(tool_calls=[call("shout", text="hi")]), Reply(text="HI")])
    with caplog.at_level("ERROR", logger="tether.observers"):
        result = await observed_agent(BrokenScope(), provider, [shout]).run("x")
    assert result.ok and result.tool_calls == 1 and result.tool_errors == 0
    assert "tool scope of observer" in caplog.text and "scope bug" in caplog.text
