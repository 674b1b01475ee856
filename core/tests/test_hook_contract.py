"""The hook contract: hooks are called by keyword, so specs can grow; one error for
unknown component names; agents take a plugin manager or load no entry points."""

from __future__ import annotations

import types
from typing import Any

import pytest

import tether
from tether import hookspecs
from tether.config import Config
from tether.errors import ConfigError, UnknownComponentError
from tether.plugins import PluginManager
from tether.registry import ToolRegistrar
from tether.testing import Reply, ScriptedProvider


@tether.tool
def shout(text: str) -> str:
    """Upper-case text."""
    return text.upper()


@tether.tool
def whisper(text: str) -> str:
    """Lower-case text."""
    return text.lower()


def plugin(name: str, **hooks: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, tether.hookimpl(function))
    return module


def test_a_spec_gaining_a_keyword_argument_does_not_break_an_existing_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def register_tools_v2(tools: ToolRegistrar, prefix: str) -> None:
        """A later version of the spec: implementations may also take ``prefix``."""

    monkeypatch.setattr(hookspecs, "register_tools", hookspecs.hookspec(register_tools_v2))

    def old_plugin(tools: ToolRegistrar) -> None:  # written against the old spec
        tools.add(shout)

    def new_plugin(prefix: str, tools: ToolRegistrar) -> None:  # any order, by name
        tools.add(whisper, name=f"{prefix}whisper")

    manager = PluginManager(
        plugins=[
            plugin("old", register_tools=old_plugin),
            plugin("new", register_tools=new_plugin),
        ],
        entry_points=False,
        hook_arguments={"prefix": "quiet-"},
    )
    assert manager.errors == []
    assert "shout" in manager.tools and "quiet-whisper" in manager.tools
    assert [t.name for t in manager.tools.get("quiet-whisper")] == ["whisper"]


def test_hook_arguments_a_manager_does_not_have_arrive_as_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def register_tools_v2(tools: ToolRegistrar, prefix: str | None) -> None:
        """A later version of the spec."""

    monkeypatch.setattr(hookspecs, "register_tools", hookspecs.hookspec(register_tools_v2))
    seen: list[object] = []

    def new_plugin(tools: ToolRegistrar, prefix: str | None) -> None:
        seen.append(prefix)
        tools.add(shout)

    manager = PluginManager(plugins=[plugin("new", register_tools=new_plugin)], entry_points=False)
    assert "shout" in manager.tools and seen == [None]


@pytest.mark.parametrize(
    ("kind", "name", "near"),
    [
        ("providers", "scriptd", "scripted"),
        ("session_stores", "jsnl", "jsonl"),
        ("compaction_strategies", "sumarize", "summarize"),
        ("tools", "shuot", "shout"),
    ],
)
def test_unknown_names_of_every_kind_raise_one_error_with_near_matches(
    kind: str, name: str, near: str
) -> None:
    def register_providers(providers: Any) -> None:
        providers.add("scripted", lambda config: ScriptedProvider())

    def register_tools(tools: ToolRegistrar) -> None:
        tools.add(shout)

    manager = PluginManager(
        plugins=[plugin("p", register_providers=register_providers, register_tools=register_tools)],
        entry_points=False,
    )
    registrar = getattr(manager, kind)
    with pytest.raises(UnknownComponentError) as excinfo:
        registrar.get(name, advice="Do this.")
    error = excinfo.value
    assert isinstance(error, ConfigError) and isinstance(error, KeyError)
    assert error.name == name and near in error.near and error.installed == registrar.names()
    message = str(error)
    assert message.startswith(f'No {registrar.noun or registrar.kind} named "{name}".')
    assert f'Did you mean "{near}"?' in message and message.endswith("Do this.")


def test_an_agent_with_entry_points_off_loads_only_builtins_and_its_plugins() -> None:
    agent = tether.Agent(
        ScriptedProvider(),
        config=Config(),
        plugins=[plugin("mine", register_tools=lambda tools: tools.add(shout))],
        entry_points=False,
    )
    assert [p.name for p in agent.plugins.plugins] == [
        *["compaction", "demo", "sessions", "strategies"],
        "mine",
    ]
    everything = {p.name for p in PluginManager().plugins}
    assert len(everything) > 1  # the first-party plugins are installed: they were skipped


async def test_an_agent_uses_the_plugin_manager_it_is_given() -> None:
    manager = PluginManager(
        plugins=[plugin("mine", register_tools=lambda tools: tools.add(shout))],
        entry_points=False,
    )
    provider = ScriptedProvider([Reply(text="ok")])
    first = tether.Agent(provider, tools=["shout"], config=Config(), plugin_manager=manager)
    second = tether.Agent(provider, tools=["shout"], config=Config(), plugin_manager=manager)
    assert first.plugins is manager and second.plugins is manager
    assert [t.name for t in first.tools()] == ["shout"]
    assert (await first.run("hi")).output == "ok"
    with pytest.raises(ConfigError, match="either plugin_manager= or plugins="):
        tether.Agent(provider, config=Config(), plugin_manager=manager, entry_points=False)


def test_make_agent_loads_no_entry_points(make_agent: Any) -> None:
    agent, _ = make_agent()
    assert [p.name for p in agent.plugins.plugins] == [
        "compaction",
        "demo",
        "sessions",
        "strategies",
    ]
