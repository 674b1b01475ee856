"""Evaluators by name, filled through the ``register_evaluators`` hook.

:func:`load_evaluators` builds its own pluggy manager for the ``tether`` project, adds
the :mod:`tether_evals.hookspecs`, registers the built-in evaluators (through the same
hook), then every module of the ``tether`` entry-point group. Each entry point is loaded
in its own ``try``: a broken plugin is listed in :attr:`EvaluatorRegistrar.errors` and
the others load. ``TETHER_PLUGINS_ALLOW``, ``TETHER_PLUGINS_DENY`` and
``TETHER_DISABLE_PLUGIN_AUTOLOAD`` apply as they do to tether's own plugins.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

import pluggy

from tether import DuplicateComponentError, UnknownComponentError

from . import hookspecs
from .errors import EvaluatorError

if TYPE_CHECKING:
    from .dataset import Check
    from .evaluators.base import Evaluator

__all__ = ["EvaluatorRegistrar", "load_evaluators"]

EvaluatorFactory = Callable[..., "Evaluator"]


@dataclass(frozen=True, slots=True)
class _Entry:
    factory: EvaluatorFactory
    plugin: str
    description: str


class EvaluatorRegistrar:
    """``evaluators.add(name, factory)``: the evaluators a dataset can name."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.plugin = "builtins"
        self.conflicts: dict[str, tuple[str, str]] = {}
        self.errors: list[str] = []
        """One line per plugin that failed to load or whose hook raised."""

    def add(self, name: str, factory: EvaluatorFactory, *, description: str = "") -> None:
        """Register ``factory`` as ``name``; a name another plugin took is a conflict."""
        existing = self._entries.get(name)
        if existing is not None and existing.plugin != self.plugin:
            self.conflicts[name] = (existing.plugin, self.plugin)
            return
        self._entries[name] = _Entry(factory, self.plugin, description)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> list[tuple[str, str, str]]:
        """(name, plugin, description) of every evaluator, sorted by name."""
        return [(n, e.plugin, e.description) for n, e in sorted(self._entries.items())]

    def get(self, name: str) -> EvaluatorFactory:
        if name in self.conflicts:
            raise DuplicateComponentError("evaluator", name, *self.conflicts[name])
        entry = self._entries.get(name)
        if entry is None:
            near = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
            message = f'No evaluator named "{name}".'
            if near:
                message += " Did you mean " + " or ".join(f'"{n}"' for n in near) + "?"
            message += (
                f" Installed: {', '.join(self.names()) or 'none'}. A plugin adds evaluators "
                "through the register_evaluators hook."
            )
            raise UnknownComponentError(
                message, kind="evaluator", name=name, installed=self.names(), near=near
            )
        return entry.factory

    def build(self, check: Check) -> Evaluator:
        """The evaluator for ``check``, its settings validated by the factory."""
        factory = self.get(check.type)
        try:
            return factory(**check.settings)
        except (TypeError, ValueError) as exc:
            raise EvaluatorError(
                f'The check "{check.label}" ({check.type}) has bad settings: {exc}'
            ) from exc

    def __contains__(self, name: object) -> bool:
        return name in self._entries


def _names(variable: str) -> set[str] | None:
    names = {p.strip() for p in os.environ.get(variable, "").split(",") if p.strip()}
    return names or None


def load_evaluators(
    plugins: Iterable[object] = (), *, entry_points: bool = True
) -> EvaluatorRegistrar:
    """Every registered evaluator: built-ins, then ``plugins`` (modules or objects with
    ``@tether.hookimpl def register_evaluators``), then the ``tether`` entry points."""
    from . import builtin_evaluators

    manager = pluggy.PluginManager("tether")
    manager.add_hookspecs(hookspecs)
    registrar = EvaluatorRegistrar()
    order: list[tuple[str, object]] = [("builtins", builtin_evaluators)]
    order += [(getattr(p, "__name__", type(p).__name__), p) for p in plugins]
    if entry_points and not os.environ.get("TETHER_DISABLE_PLUGIN_AUTOLOAD"):
        allow, deny = _names("TETHER_PLUGINS_ALLOW"), _names("TETHER_PLUGINS_DENY")
        for ep in sorted(metadata.entry_points(group="tether"), key=lambda e: e.name):
            keys = {ep.name, ep.dist.name if ep.dist else ""}
            if (allow is not None and not keys & allow) or (deny is not None and keys & deny):
                continue
            try:
                module = ep.load()
            except Exception as exc:
                registrar.errors.append(f'Plugin "{ep.name}" failed to import: {exc!r}')
                continue
            if module is not builtin_evaluators:
                order.append((ep.name, module))
    for name, plugin in order:
        hook = getattr(plugin, "register_evaluators", None)
        if hook is None or manager.is_registered(plugin):
            continue
        registrar.plugin = name
        before = dict(registrar._entries)
        try:
            manager.register(plugin, name=name)
            for impl in manager.hook.register_evaluators.get_hookimpls():
                if impl.plugin is plugin:
                    args = {"evaluators": registrar} if "evaluators" in impl.argnames else {}
                    impl.function(**args)
        except Exception as exc:
            registrar._entries = before  # what a failing hook added is discarded
            registrar.errors.append(f'Plugin "{name}": register_evaluators raised {exc!r}')
    registrar.plugin = "builtins"
    return registrar
