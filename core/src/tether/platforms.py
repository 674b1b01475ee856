"""Platforms: one provider name served by several plugins, one per model family.

A cloud platform hosts models of several vendors behind one account (Vertex AI serves
Gemini and Claude), and each vendor's plugin knows its own wire format. A plugin serves
its family of a platform with ``providers.add("vertex", factory, family="gemini-")``;
another plugin adds ``family="claude-"`` to the same name. The registrar then lists
``vertex`` once, as a :class:`PlatformProvider` that hands each request to the family
whose prefix starts the model id (``vertex/claude-sonnet-4-5@20250929`` → the
``claude-`` family), building that family's provider on first use with the shared
``[providers.vertex]`` configuration.

Each family may also name the distributions that serve the platform's other families
(``family_plugins={"claude-": "tether-anthropic"}``), so a model of a family whose plugin
is not installed fails with the ``pip install`` line to run, not a bare "unknown".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import UnknownProviderError
from .install_hints import clone_install

if TYPE_CHECKING:
    from .config import ProviderConfig
    from .provider import (
        ModelCapabilities,
        ModelInfo,
        ModelRequest,
        ModelResponse,
        Provider,
        ProviderEvent,
    )

__all__ = ["Family", "Platform", "PlatformProvider"]


@dataclass(frozen=True, slots=True)
class Family:
    """One plugin's share of a platform: the models whose id starts with ``prefix``."""

    prefix: str
    factory: Callable[[ProviderConfig], Provider]
    plugin: str
    distribution: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Platform:
    """The families registered under one provider name, and who serves the missing ones."""

    name: str
    families: dict[str, Family] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)
    """Family prefix → the distribution that serves it, as the families declared it."""

    def family_for(self, model: str) -> Family:
        """The installed family of ``model`` (the longest prefix that starts it).

        Raises :class:`~tether.errors.UnknownProviderError` naming the distribution to
        install when the family is known but not installed, and listing the known
        families when no family matches.
        """
        matches = [p for p in self.families if model.startswith(p)]
        if matches:
            return self.families[max(matches, key=len)]
        wanted = [p for p in self.known if model.startswith(p)]
        if wanted:
            prefix = max(wanted, key=len)
            distribution = self.known[prefix]
            message = (
                f'The model "{self.name}/{model}" is a {prefix}* model, which {self.name} '
                f"serves through the {distribution} plugin; it is not installed. Install it: "
                f"{clone_install(distribution)} (in a clone of tether)"
            )
        else:
            message = (
                f'No model family of the {self.name} platform matches "{model}". Known '
                f"families: {self.listing()}. Write the model as {self.name}/<family model id>."
            )
        raise UnknownProviderError(
            message,
            name=f"{self.name}/{model}",
            installed=sorted(self.families),
            kind="model family",
        )

    def listing(self) -> str:
        """``claude-* (tether-anthropic, not installed), gemini-* (tether-google)``."""
        prefixes = sorted({*self.families, *self.known})
        parts = []
        for prefix in prefixes:
            family = self.families.get(prefix)
            who = family.distribution if family else f"{self.known[prefix]}, not installed"
            parts.append(f"{prefix}* ({who})")
        return ", ".join(parts)

    def options(self) -> dict[str, Any]:
        """The registration options of the platform as a whole: every family's
        ``settings`` (none declared, when a family accepts any key) and
        ``key_variables``, the first family's ``default_model``."""
        families = [self.families[p] for p in sorted(self.families)]
        declared = [f.options.get("settings") for f in families]
        settings = (
            None
            if any(d is None for d in declared)
            else {key: kind for d in declared if d for key, kind in d.items()}
        )
        variables: list[str] = []
        for family in families:
            variables.extend(
                v for v in family.options.get("key_variables", ()) if v not in variables
            )
        defaults = [f.options["default_model"] for f in families if f.options.get("default_model")]
        descriptions = [f.options["description"] for f in families if f.options.get("description")]
        return {
            "prefixes": (),
            "description": " ".join(descriptions) + f" Families: {self.listing()}.",
            "key_variables": tuple(variables),
            "default_model": defaults[0] if defaults else None,
            "settings": settings,
            "families": {p: f.distribution for p, f in self.families.items()},
        }

    def factory(self, config: ProviderConfig) -> PlatformProvider:
        """The provider factory the registrar lists under the platform's name."""
        return PlatformProvider(self, config)


class PlatformProvider:
    """A :class:`~tether.provider.Provider` that hands each model to its family's provider.

    Family providers are built on first use, all with the platform's configuration, and
    closed by :meth:`aclose`. :meth:`validate_auth` checks the families in use (those a
    model was resolved for; an agent asks for its model's capabilities first), or every
    installed family when none is in use yet.
    """

    def __init__(self, platform: Platform, config: ProviderConfig) -> None:
        self.name = platform.name
        self._platform = platform
        self._config = config
        self._built: dict[str, Provider] = {}

    def family_provider(self, model: str) -> Provider:
        """The provider of ``model``'s family (built now if this is its first use)."""
        return self._provider(self._platform.family_for(model))

    def _provider(self, family: Family) -> Provider:
        provider = self._built.get(family.prefix)
        if provider is None:
            provider = self._built[family.prefix] = family.factory(self._config)
        return provider

    def _all(self) -> list[Provider]:
        return [self._provider(self._platform.families[p]) for p in sorted(self._platform.families)]

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        async for event in self.family_provider(request.model).stream(request):
            yield event

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.family_provider(request.model).complete(request)

    def capabilities(self, model: str) -> ModelCapabilities:
        return self.family_provider(model).capabilities(model)

    def catalogue(self) -> Sequence[ModelInfo]:
        """Every family's models (a configured extra model is listed by its family only)."""
        listed: list[ModelInfo] = []
        for prefix in sorted(self._platform.families):
            provider = self._provider(self._platform.families[prefix])
            listed.extend(info for info in provider.catalogue() if info.id.startswith(prefix))
        return listed

    async def validate_auth(self) -> None:
        for provider in list(self._built.values()) or self._all():
            await provider.validate_auth()

    async def verify_key(self) -> None:
        """Ask each family's API whether the platform's credentials are accepted."""
        for provider in self._all():
            verify = getattr(provider, "verify_key", None)
            await (verify() if callable(verify) else provider.validate_auth())

    async def aclose(self) -> None:
        built, self._built = list(self._built.values()), {}
        for provider in built:
            await provider.aclose()

    def __repr__(self) -> str:
        return f"PlatformProvider({self.name!r}, families={sorted(self._platform.families)})"
