"""Old import paths of the parts that left the kernel for distributions of their own.

The command line, the knowledge base, cross-session memory, the run log and the heavy half
of the test kit were once modules of ``tether``. They are separate distributions now
(``tether-cli``, ``tether-knowledge``, ``tether-memory``, ``tether-runlog``,
``tether-testing``); their old paths keep working through tether 0.x:

- with the distribution installed, ``import tether.runlog`` (or any module below it) gives
  the module of the new package itself (``tether_runlog``), the very same object, with a
  :class:`DeprecationWarning` naming the new path;
- without it, the import fails with an :class:`ImportError` naming the distribution to
  install.

:func:`install` puts the finder that does this on :data:`sys.meta_path`; ``import tether``
calls it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

__all__ = ["RELOCATED", "RelocatedFinder", "install", "new_name"]

#: Old module path -> (new module path, distribution that holds it, pip requirement).
RELOCATED: dict[str, tuple[str, str, str]] = {
    "tether.cli.runlog": ("tether_runlog.commands", "tether-runlog", "tether-runlog"),
    "tether.cli.memory": ("tether_memory.commands", "tether-memory", "tether-memory"),
    "tether.cli.kb_paths": ("tether_knowledge.kb_paths", "tether-knowledge", '"tether[kb]"'),
    "tether.cli.kb": ("tether_knowledge.commands", "tether-knowledge", '"tether[kb]"'),
    "tether.cli": ("tether_cli", "tether-cli", '"tether[cli]"'),
    "tether.scaffold": ("tether_cli.scaffold", "tether-cli", '"tether[cli]"'),
    "tether.knowledge": ("tether_knowledge", "tether-knowledge", '"tether[kb]"'),
    "tether.memory": ("tether_memory", "tether-memory", "tether-memory"),
    "tether.runlog": ("tether_runlog", "tether-runlog", "tether-runlog"),
    **{
        f"tether.testing.{name}": (f"tether_testing.{name}", "tether-testing", "tether-testing")
        for name in (
            "cli",
            "fault_proxy",
            "google_oauth",
            "http",
            "kb_backend",
            "pytest_plugin",
            "sandbox",
            "screenshots",
            "session_store",
            "wire",
        )
    },
}


def new_name(old: str) -> tuple[str, str, str] | None:
    """The new module path of ``old`` (a module path that moved, or one below it), with
    the distribution holding it and what to ``pip install``; ``None`` if it did not move."""
    for prefix in sorted(RELOCATED, key=len, reverse=True):
        if old == prefix or old.startswith(prefix + "."):
            new, distribution, requirement = RELOCATED[prefix]
            return new + old[len(prefix) :], distribution, requirement
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module of its new path (no second copy)."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec  # the import system set the old name's spec on it


class RelocatedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths listed in :data:`RELOCATED`."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        moved = new_name(fullname)
        if moved is None:
            return None
        new, distribution, requirement = moved
        try:
            module = importlib.import_module(new)
        except ModuleNotFoundError as exc:
            if exc.name is None or not new.startswith(exc.name):
                raise
            raise ImportError(
                f"{fullname} moved to the {distribution} distribution ({new}), which is not "
                f"installed. Install it: pip install {requirement}",
                name=fullname,
            ) from exc
        warnings.warn(
            f"{fullname} is deprecated: it is {new} (distribution {distribution}) now; "
            "the old path goes in tether 1.0.",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.machinery.ModuleSpec(
            fullname, _Alias(module), is_package=hasattr(module, "__path__")
        )


def install() -> None:
    """Put the finder on :data:`sys.meta_path` (once)."""
    if not any(isinstance(finder, RelocatedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, RelocatedFinder())
