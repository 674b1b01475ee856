"""Registrars: the objects plugins receive in ``register_*`` hooks and call ``add`` on.

A registrar remembers which plugin (and distribution) added each component, so a name
registered twice can be reported with both distributions, and ``tether plugins`` can show
who provides what. Registrars grow keyword options over time; they never lose them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .errors import DuplicateComponentError, UnknownComponentError, UnknownProviderError
from .platforms import Family, Platform
from .tools import Tool, Toolset, as_tool

if TYPE_CHECKING:
    import os

    from .config import Config, ProviderConfig
    from .provider import Provider
    from .skills import Skill

__all__ = [
    "CommandRegistrar",
    "CompactionStrategyRegistrar",
    "EmbedderRegistrar",
    "KnowledgeBackendRegistrar",
    "ObserverRegistrar",
    "ProviderRegistrar",
    "Registrar",
    "Registration",
    "SessionStoreRegistrar",
    "SkillRegistrar",
    "StrategyRegistrar",
    "ToolRegistrar",
]

T = TypeVar("T")
R = TypeVar("R", bound="Registrar[Any]")


@dataclass(frozen=True, slots=True)
class Source:
    """Who is registering: the plugin (entry-point name) and its distribution."""

    plugin: str
    distribution: str


BUILTIN = Source("builtins", "tether")


@dataclass(slots=True)
class Registration(Generic[T]):
    name: str
    component: T
    source: Source
    options: dict[str, Any] = field(default_factory=dict)


class Registrar(Generic[T]):
    """A name → component table filled by plugins."""

    kind = "component"
    noun: str | None = None
    """How messages name the kind (``kind`` when ``None``)."""
    unknown_error: type[UnknownComponentError] = UnknownComponentError

    def __init__(self) -> None:
        self._entries: dict[str, Registration[T]] = {}
        self.conflicts: list[DuplicateComponentError] = []
        self.source: Source = BUILTIN
        self.config: Config | None = None
        """The configuration of the agent or CLI invocation being set up, when known;
        for plugins whose components come from it (``config.section("mcp")``)."""
        self._siblings: Callable[[type[Any]], Any] | None = None

    def sibling(self, kind: type[R]) -> R:
        """The same plugin manager's registrar of another ``kind``, for components built
        from other components (the ``kb`` toolset from backends and embedders).

        Call it when the component is used, not while registering: the other registrar
        is filled on first use, by calling its hook on every plugin.
        """
        if self._siblings is None:
            raise LookupError(f"This {self.kind} registrar belongs to no plugin manager.")
        sibling: R = self._siblings(kind)
        return sibling

    def add(self, name: str, component: T, **options: Any) -> None:
        """Register ``component`` as ``name``. A name taken by another plugin is a conflict."""
        existing = self._entries.get(name)
        if existing is not None and existing.source != self.source:
            self.conflicts.append(
                DuplicateComponentError(
                    self.kind, name, existing.source.distribution, self.source.distribution
                )
            )
            return
        self._entries[name] = Registration(name, component, self.source, options)

    def get(self, name: str, *, advice: str = "") -> T:
        """The component registered as ``name``.

        Raises :class:`~tether.errors.DuplicateComponentError` if two plugins claimed the
        name, and :class:`~tether.errors.UnknownComponentError` (see :meth:`unknown`,
        which receives ``advice``) if none did.
        """
        for conflict in self.conflicts:
            if conflict.name == name:
                raise conflict
        entry = self._entries.get(name)
        if entry is None:
            raise self.unknown(name, advice=advice)
        return entry.component

    def unknown(self, name: str, *, advice: str = "") -> UnknownComponentError:
        """The error for a ``name`` nobody registered: ``No tool named "x". Did you mean
        "y"? Installed: y, z.`` followed by ``advice`` (what the user can do about it)."""
        near = self.near(name)
        installed = self.names()
        message = f'No {self.noun or self.kind} named "{name}".'
        if near:
            message += " Did you mean " + " or ".join(f'"{n}"' for n in near) + "?"
        message += f" Installed: {', '.join(installed) or 'none'}."
        if advice:
            message += f" {advice}"
        return self.unknown_error(
            message, kind=self.kind, name=name, installed=installed, near=near
        )

    def registration(self, name: str) -> Registration[T]:
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def near(self, name: str) -> list[str]:
        """Registered names that look like ``name`` (for "did you mean" messages)."""
        return difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Registration[T]]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def _drop_source(self, source: Source) -> None:
        """Forget everything ``source`` registered (its hook raised half-way)."""
        for name in [n for n, r in self._entries.items() if r.source == source]:
            del self._entries[name]


ProviderFactory = Callable[["ProviderConfig"], "Provider"]


class ProviderRegistrar(Registrar[ProviderFactory]):
    """``providers.add("acme", AcmeProvider, prefixes=("acme-",))``.

    The factory is called lazily, once per agent, with the provider's
    :class:`~tether.config.ProviderConfig`; import the vendor SDK inside it, not at module
    import time. ``prefixes`` let bare model names (``acme-large``) resolve to this provider.

    Optional facts the command line uses: ``key_variables``, the environment variables a
    key is read from (a provider whose key is set can be picked as the default model, with
    its ``default_model``); ``settings``, the keys ``[providers.NAME]`` accepts beyond the
    common ones (``api_key_env``, ``base_url``, ``timeout``, ``models``), each with its
    type (anything pydantic validates: ``float``, ``Literal["a", "b"]``, ...). When
    ``settings`` is given, any other key in that section is a configuration error.

    Platforms: ``family="gemini-"`` registers the factory for the models of ``name`` whose
    id starts with that prefix, so several plugins can serve one platform, each its own
    model family (``vertex/gemini-*`` from one plugin, ``vertex/claude-*`` from another).
    The name is then listed once, as a :class:`~tether.platforms.PlatformProvider` that
    hands each model to its family's provider; ``settings`` and ``key_variables`` of the
    families are merged. ``family_plugins`` maps the prefixes of the platform's other
    families to what to install for them (a distribution, with its extra), so a model of
    a family whose plugin is missing fails with the ``pip install`` line to run. Two
    plugins claiming one family, or one plugin the whole name while another claims a
    family, is a conflict.
    """

    kind = "provider"
    unknown_error = UnknownProviderError

    def __init__(self) -> None:
        super().__init__()
        self._platforms: dict[str, Platform] = {}

    def add(  # type: ignore[override]
        self,
        name: str,
        factory: ProviderFactory,
        *,
        prefixes: tuple[str, ...] = (),
        description: str = "",
        key_variables: tuple[str, ...] = (),
        default_model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        family: str | None = None,
        family_plugins: Mapping[str, str] | None = None,
    ) -> None:
        options: dict[str, Any] = {
            "prefixes": tuple(prefixes),
            "description": description,
            "key_variables": tuple(key_variables),
            "default_model": default_model,
            "settings": dict(settings) if settings is not None else None,
        }
        if family is None:
            if name in self._platforms:
                self._conflict(name, self._entries[name].source)
                return
            super().add(name, factory, **options)
            return
        self._add_family(name, family, factory, options, dict(family_plugins or {}))

    def _add_family(
        self,
        name: str,
        prefix: str,
        factory: ProviderFactory,
        options: dict[str, Any],
        known: dict[str, str],
    ) -> None:
        if not prefix:
            raise ValueError(f'The family of provider "{name}" needs a model-id prefix.')
        platform = self._platforms.get(name)
        existing = self._entries.get(name)
        if existing is not None and platform is None:
            self._conflict(name, existing.source)
            return
        platform = platform or self._platforms.setdefault(name, Platform(name))
        taken = platform.families.get(prefix)
        if taken is not None and taken.plugin != self.source.plugin:
            self._conflict(name, Source(taken.plugin, taken.distribution))
            return
        platform.families[prefix] = Family(
            prefix, factory, self.source.plugin, self.source.distribution, options
        )
        for other, distribution in known.items():
            platform.known.setdefault(other, distribution)
        self._list_platform(platform)

    def _list_platform(self, platform: Platform) -> None:
        """(Re)build the one registration that stands for ``platform``."""
        families = [platform.families[p] for p in sorted(platform.families)]
        if not families:
            self._entries.pop(platform.name, None)
            del self._platforms[platform.name]
            return
        plugins = ", ".join(dict.fromkeys(f.plugin for f in families))
        distributions = ", ".join(dict.fromkeys(f.distribution for f in families))
        self._entries[platform.name] = Registration(
            platform.name, platform.factory, Source(plugins, distributions), platform.options()
        )

    def _conflict(self, name: str, existing: Source) -> None:
        self.conflicts.append(
            DuplicateComponentError(
                self.kind, name, existing.distribution, self.source.distribution
            )
        )

    def platform(self, name: str) -> Platform | None:
        """The platform registered as ``name`` by model family, or ``None``."""
        return self._platforms.get(name)

    def _drop_source(self, source: Source) -> None:
        for platform in list(self._platforms.values()):
            for prefix, family in list(platform.families.items()):
                if family.plugin == source.plugin:
                    del platform.families[prefix]
            self._list_platform(platform)
        super()._drop_source(source)

    def for_bare_model(self, model: str) -> str | None:
        """The provider whose longest registered prefix starts ``model``."""
        best: tuple[int, str] | None = None
        for reg in self:
            for prefix in reg.options.get("prefixes", ()):
                if model.startswith(prefix) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), reg.name)
        return best[1] if best else None


class ToolRegistrar(Registrar[Toolset]):
    """``tools.add(get_weather)`` or ``tools.add(Toolset("fs", [...]))``.

    A toolset is enabled by its name; a single tool is a toolset of one, named after it.
    ``settings`` declares the keys the toolset's tools read from ``[tool_settings.<toolset>]``
    and ``[tool_settings.<tool>]``, each with its type (anything pydantic validates:
    ``int``, ``list[str]``, ``Annotated[float, Field(ge=0)]``, ...). When declared, any
    other key, or a value of the wrong type, is a configuration error at start.
    """

    kind = "tool"
    noun = "tool or toolset"

    def add(  # type: ignore[override]
        self,
        item: Tool | Toolset | Callable[..., Any],
        name: str | None = None,
        *,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        toolset = item if isinstance(item, Toolset) else Toolset(name or as_tool(item).name, [item])
        super().add(
            name or toolset.name,
            toolset,
            settings=dict(settings) if settings is not None else None,
        )


class KnowledgeBackendRegistrar(Registrar[Callable[..., Any]]):
    """``backends.add("sqlite", SqliteBackend)``: a factory taking keyword settings.

    Its old name, ``MemoryBackendRegistrar``, still imports (with a ``DeprecationWarning``)
    until tether 1.0."""

    kind = "knowledge backend"
    noun = "knowledge-base backend"


class CompactionStrategyRegistrar(Registrar[Callable[..., Any]]):
    """``strategies.add("summarize", SummarizeStrategy)``: a factory taking keyword settings."""

    kind = "compaction strategy"


class SessionStoreRegistrar(Registrar[Callable[..., Any]]):
    """``stores.add("jsonl", JsonlSessionStore)``: where named sessions live."""

    kind = "session store"


class EmbedderRegistrar(Registrar[Callable[..., Any]]):
    """``embedders.add("openai", OpenAIEmbedder)``: a factory taking keyword settings."""

    kind = "embedder"


class ObserverRegistrar(Registrar[Callable[..., Any]]):
    """``observers.add("otel", callback)``: ``callback(event)`` sees every run event.

    With ``configure=True`` the component is a factory instead: each agent calls
    ``factory(settings, config)`` once, with the ``[observers.<name>]`` settings of its
    configuration (a dict, empty when the section is absent) and the whole
    :class:`~tether.config.Config`, and uses the callback it returns (``None`` means "not
    active with this configuration"). ``enabled = false`` in that section turns any
    observer off. Observers must be fast and must not raise; an exception is logged and
    ignored.
    """

    kind = "event observer"

    def add(  # type: ignore[override]
        self, name: str, callback: Callable[..., Any], *, configure: bool = False
    ) -> None:
        super().add(name, callback, configure=configure)


class CommandRegistrar(Registrar[Any]):
    """``commands.add(click_command)``: adds a sub-command to the ``tether`` CLI."""

    kind = "command"

    def add(self, command: Any, name: str | None = None) -> None:  # type: ignore[override]
        super().add(name or command.name, command)


class SkillRegistrar(Registrar["Skill"]):
    """``skills.add(path_to_skill_folder)`` or ``skills.add(Skill(...))``.

    A folder is parsed at once (:func:`tether.skills.parse_skill`), so a malformed skill
    is reported as a load error of the plugin that added it.
    """

    kind = "skill"

    def add(self, skill: Skill | str | os.PathLike[str]) -> None:  # type: ignore[override]
        from .skills import Skill, parse_skill

        parsed = skill if isinstance(skill, Skill) else parse_skill(skill)
        super().add(parsed.name, parsed)


class StrategyRegistrar(Registrar[Callable[..., Any]]):
    """``strategies.add("plan-and-execute", factory)``: how an agent works through a task.

    ``factory(**settings)`` returns a :class:`~tether.strategies.Strategy`; ``react`` (the
    plain loop), ``plan-and-execute`` and ``reflexion`` are built in.
    """

    kind = "strategy"


_RENAMED = {"MemoryBackendRegistrar": "KnowledgeBackendRegistrar"}


def __getattr__(name: str) -> Any:
    from .renamed import renamed

    return renamed(__name__, name, _RENAMED)
