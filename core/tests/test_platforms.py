"""Platforms: two plugins serve one provider name, each its own model family."""

from __future__ import annotations

import types
from typing import Any

import pytest

import tether
from tether.config import Config, ProviderConfig
from tether.config_check import check_plugin_settings as check_config
from tether.errors import DuplicateComponentError, UnknownProviderError
from tether.platforms import PlatformProvider
from tether.plugins import PluginManager
from tether.provider import ModelCapabilities, ModelInfo
from tether.resolve import parse_model_string
from tether.testing import Reply, ScriptedProvider

FAMILIES = {"gemini-": "tether-gem", "claude-": "tether-cla"}


def plugin(name: str, register: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.register_providers = tether.hookimpl(register)  # type: ignore[attr-defined]
    return module


class FamilyProvider(ScriptedProvider):
    """A scripted provider that remembers the configuration it was built with."""

    def __init__(self, family: str, config: ProviderConfig) -> None:
        super().__init__(
            handler=lambda request: Reply(f"{family} answers {request.model}"),
            capabilities=ModelCapabilities(context_window=len(family) * 1000),
        )
        self.name = "vertex"
        self.family = family
        self.config = config
        self.models = (
            ModelInfo(f"{family}-one", self.default_capabilities),
            ModelInfo("unrelated-extra", self.default_capabilities),
        )
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


def family_plugin(
    family: str, built: list[FamilyProvider], setting: str, kind: type
) -> types.ModuleType:
    """A plugin (module ``family[:3]``) serving the ``family-`` models of ``vertex``,
    with the platform's ``project`` setting and one of its own."""

    def register(providers):  # type: ignore[no-untyped-def]
        def factory(config: ProviderConfig) -> FamilyProvider:
            built.append(FamilyProvider(family, config))
            return built[-1]

        providers.add(
            "vertex",
            factory,
            family=f"{family}-",
            family_plugins=FAMILIES,
            description=f"{family.capitalize()} on Vertex.",
            settings={"project": str, setting: kind},
        )

    return plugin(family[:3], register)


def gemini_plugin(built: list[FamilyProvider]) -> types.ModuleType:
    return family_plugin("gemini", built, "seed", int)


def claude_plugin(built: list[FamilyProvider]) -> types.ModuleType:
    return family_plugin("claude", built, "prompt_caching", bool)


def manager(*plugins: types.ModuleType, config: Config | None = None) -> PluginManager:
    return PluginManager(plugins=plugins, entry_points=False, config=config)


async def test_each_model_goes_to_its_familys_plugin_with_the_platforms_config() -> None:
    built: list[FamilyProvider] = []
    config = Config(providers={"vertex": {"project": "p-1"}})
    plugins = manager(gemini_plugin(built), claude_plugin(built), config=config)
    agent = tether.Agent(
        model="vertex/claude-sonnet-4-5@20250929", plugin_manager=plugins, config=config
    )
    result = await agent.run("hi")
    assert result.output == "claude answers claude-sonnet-4-5@20250929"
    assert [p.family for p in built] == ["claude"]
    assert built[0].config.extra == {"project": "p-1"}
    assert result.messages[-1].meta.model == "vertex/claude-sonnet-4-5@20250929"

    agent = tether.Agent(model="vertex/gemini-2.5-pro", plugin_manager=plugins, config=config)
    assert (await agent.run("hi")).output == "gemini answers gemini-2.5-pro"
    assert agent.provider().capabilities("gemini-2.5-pro").context_window == 6000
    await agent.aclose()
    assert built[-1].family == "gemini" and built[-1].closed


def test_the_platform_is_listed_once_with_both_distributions_and_merged_settings() -> None:
    registrar = manager(gemini_plugin([]), claude_plugin([])).providers
    registration = registrar.registration("vertex")
    assert registrar.names().count("vertex") == 1
    assert registration.source.plugin == "cla, gem"  # the families' plugins, by prefix
    assert registration.options["settings"] == {"project": str, "seed": int, "prompt_caching": bool}
    assert registration.options["families"] == {
        "gemini-": "(in-process)",
        "claude-": "(in-process)",
    }
    assert "Claude on Vertex." in registration.options["description"]
    check_config(
        Config(providers={"vertex": {"project": "p", "seed": 1}}),
        manager(gemini_plugin([]), claude_plugin([])),
    )
    with pytest.raises(tether.ConfigError, match="bogus"):
        check_config(Config(providers={"vertex": {"bogus": 1}}), manager(gemini_plugin([])))


def test_the_catalogue_lists_each_familys_own_models() -> None:
    registrar = manager(gemini_plugin([]), claude_plugin([])).providers
    provider = registrar.get("vertex")(ProviderConfig())
    assert isinstance(provider, PlatformProvider)
    assert [m.id for m in provider.catalogue()] == ["claude-one", "gemini-one"]


def test_a_family_whose_plugin_is_missing_names_the_distribution_to_install() -> None:
    registrar = manager(gemini_plugin([])).providers
    assert str(parse_model_string("vertex/gemini-2.5-pro", registrar)) == "vertex/gemini-2.5-pro"
    with pytest.raises(UnknownProviderError) as excinfo:
        parse_model_string("vertex/claude-sonnet-4-5@20250929", registrar)
    assert "uv pip install ./plugins/cla" in str(excinfo.value)
    assert excinfo.value.kind == "model family" and excinfo.value.installed == ["gemini-"]


def test_an_unknown_family_lists_the_known_ones() -> None:
    registrar = manager(gemini_plugin([])).providers
    with pytest.raises(UnknownProviderError) as excinfo:
        parse_model_string("vertex/llama-4", registrar)
    assert str(excinfo.value) == (
        'No model family of the vertex platform matches "llama-4". Known families: claude-* '
        "(tether-cla, not installed), gemini-* ((in-process)). Write the model as vertex/<family "
        "model id>."
    )
    provider = registrar.get("vertex")(ProviderConfig())
    with pytest.raises(UnknownProviderError, match="llama-4"):
        provider.capabilities("llama-4")


def test_two_plugins_claiming_one_family_or_the_whole_name_conflict() -> None:
    registrar = manager(
        gemini_plugin([]), plugin("gem2", gemini_plugin([]).register_providers)
    ).providers
    with pytest.raises(DuplicateComponentError):
        registrar.get("vertex")

    def plain(providers):  # type: ignore[no-untyped-def]
        providers.add("vertex", lambda config: ScriptedProvider())

    for order in (
        (plugin("plain", plain), gemini_plugin([])),
        (gemini_plugin([]), plugin("plain", plain)),
    ):
        with pytest.raises(DuplicateComponentError, match="vertex"):
            manager(*order).providers.get("vertex")


def test_a_plugin_whose_hook_fails_takes_its_family_with_it() -> None:
    def broken(providers):  # type: ignore[no-untyped-def]
        providers.add("vertex", lambda config: ScriptedProvider(), family="claude-")
        raise RuntimeError("boom")

    registrar = manager(gemini_plugin([]), plugin("broken", broken)).providers
    platform = registrar.platform("vertex")
    assert platform is not None and sorted(platform.families) == ["gemini-"]
    assert registrar.registration("vertex").source.plugin == "gem"


async def test_validate_auth_checks_the_family_in_use_or_all_of_them() -> None:
    built: list[FamilyProvider] = []
    registrar = manager(gemini_plugin(built), claude_plugin(built)).providers
    provider = registrar.get("vertex")(ProviderConfig())
    await provider.validate_auth()
    assert sorted(p.family for p in built) == ["claude", "gemini"]

    built.clear()
    provider = registrar.get("vertex")(ProviderConfig())
    provider.capabilities("gemini-2.5-pro")
    await provider.validate_auth()
    assert [p.family for p in built] == ["gemini"]


def test_a_family_that_accepts_any_key_makes_the_platform_accept_any_key() -> None:
    def loose(providers):  # type: ignore[no-untyped-def]
        providers.add("vertex", lambda config: ScriptedProvider(), family="llama-")

    plugins = manager(gemini_plugin([]), plugin("loose", loose))
    assert plugins.providers.registration("vertex").options["settings"] is None
    check_config(Config(providers={"vertex": {"anything": 1}}), plugins)
