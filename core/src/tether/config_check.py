"""Checking the plugin-owned parts of the configuration against what plugins registered.

``parse_config`` validates the keys tether itself defines. ``[providers.<name>]`` and
``[tool_settings.<name>]`` belong to plugins, so they can only be checked once plugins
are loaded: :func:`check_plugin_settings` does that, and the command line calls it before
a run starts. It reports, naming the file, the section and the key:

- a ``[providers.X]`` section for a provider no plugin registers;
- a key under ``[providers.X]`` that the provider does not declare (``settings=`` when it
  registers), or a value of the wrong type;
- a ``[tool_settings.X]`` section naming no registered tool or toolset;
- a key under ``[tool_settings.X]`` that the toolset does not declare, or a value of the
  wrong type.

Providers and toolsets that declare no ``settings`` accept any key (their plugin checks
them). A toolset whose tools appear at run time (``dynamic``, such as an MCP server's)
makes tool sections that name no known tool unverifiable, so they are accepted then.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from .config import Config
    from .plugins import PluginManager

__all__ = ["check_plugin_settings", "check_tool_names"]

#: Keys every ``[providers.X]`` section accepts (:class:`~tether.config.ProviderConfig`).
COMMON_PROVIDER_KEYS = ("api_key", "api_key_env", "base_url", "timeout", "models")


def check_plugin_settings(config: Config, plugins: PluginManager) -> None:
    """Raise :class:`~tether.errors.ConfigError` listing every problem of the plugin
    sections of ``config`` (see the module docstring); return quietly if there is none."""
    problems = [
        *_provider_problems(config, plugins),
        *_tool_problems(config, plugins),
        *_name_problems(config, plugins),
    ]
    if problems:
        where = str(config.source) if config.source is not None else "The configuration"
        raise ConfigError(f"{where}: " + "; ".join(problems) + ".")


def _provider_problems(config: Config, plugins: PluginManager) -> Iterable[str]:
    registrar = plugins.providers
    for name, section in config.providers.items():
        if name not in registrar:
            yield (
                f"[providers.{name}] names no installed provider{_near(name, registrar.names())}. "
                f"Installed: {', '.join(registrar.names()) or 'none'}"
            )
            continue
        declared = registrar.registration(name).options.get("settings")
        if declared is not None:
            yield from _key_problems(
                f"[providers.{name}]", section.extra, declared, COMMON_PROVIDER_KEYS
            )
        for model, overrides in section.models.items():
            yield from _model_problems(f'[providers.{name}.models."{model}"]', overrides)


def _model_problems(section: str, overrides: Mapping[str, Any]) -> Iterable[str]:
    from .provider import ModelCapabilities

    valid = sorted(ModelCapabilities.__dataclass_fields__)
    for key in overrides:
        if key not in valid:
            yield (
                f"{section} has an unknown key {key!r}{_near(key, valid)}. "
                f"Valid keys: {', '.join(valid)}"
            )


def _name_problems(config: Config, plugins: PluginManager) -> Iterable[str]:
    strategies = plugins.compaction_strategies
    if config.compaction.strategy not in strategies:
        yield (
            f"[compaction] strategy = {config.compaction.strategy!r} names no registered "
            f"strategy{_near(config.compaction.strategy, strategies.names())}. "
            f"Available: {', '.join(strategies.names())}"
        )
    yield from _unknown_tools(config.tools, plugins, "`tools`")


def _unknown_tools(names: Iterable[str], plugins: PluginManager, key: str) -> Iterable[str]:
    names = [name for name in names if name != "memory"]
    if not names:
        return  # no tool plugin is asked for its tools (their modules stay unimported)
    registrar = plugins.tools
    for name in names:
        if name not in registrar:
            yield (
                f"{key} names {name!r}, which is no registered tool or toolset"
                f"{_near(name, registrar.names())}. Registered: {', '.join(registrar.names())}"
            )


def check_tool_names(names: Iterable[str], plugins: PluginManager, source: str) -> None:
    """Raise :class:`~tether.errors.ConfigError` if a name in ``names`` (given by
    ``source``, e.g. ``"--tools"``) is no registered tool or toolset (``memory`` is)."""
    problems = list(_unknown_tools(names, plugins, source))
    if problems:
        raise ConfigError("; ".join(problems) + ". Install the plugin that provides it.")


def _tool_problems(config: Config, plugins: PluginManager) -> Iterable[str]:
    if not config.tool_settings:
        return
    registrar = plugins.tools
    declared_by: dict[str, Mapping[str, Any] | None] = {}
    dynamic = False
    for registration in registrar:
        toolset = registration.component
        settings = registration.options.get("settings")
        dynamic = dynamic or bool(getattr(toolset, "dynamic", False))
        declared_by[registration.name] = settings
        for tool in toolset:
            declared_by.setdefault(tool.name, settings)
    declared_by.setdefault("memory", {})
    for name, section in config.tool_settings.items():
        if name not in declared_by:
            if not dynamic:
                yield (
                    f"[tool_settings.{name}] names no registered tool or toolset"
                    f"{_near(name, list(declared_by))}"
                )
            continue
        declared = declared_by[name]
        if declared is not None:
            yield from _key_problems(f"[tool_settings.{name}]", section, declared, ())


def _key_problems(
    section: str, values: Mapping[str, Any], declared: Mapping[str, Any], common: Iterable[str]
) -> Iterable[str]:
    from pydantic import TypeAdapter, ValidationError

    valid = sorted({*common, *declared})
    for key, value in values.items():
        if key not in declared:
            listing = ", ".join(valid) if valid else "none"
            yield f"{section} has an unknown key {key!r}{_near(key, valid)}. Valid keys: {listing}"
            continue
        try:
            TypeAdapter(declared[key]).validate_python(value, strict=True)
        except ValidationError as exc:
            reason = exc.errors(include_url=False)[0]["msg"]
            yield f"{section} {key} = {value!r} is not valid: {reason[:1].lower()}{reason[1:]}"


def _near(name: str, candidates: list[str]) -> str:
    near = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f' (did you mean "{near[0]}"?)' if near else ""
