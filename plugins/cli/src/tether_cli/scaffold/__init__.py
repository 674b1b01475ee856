"""``tether plugin new``: a ready plugin distribution, written from templates.

:func:`new_plugin` writes ``tether-NAME/`` (``pyproject.toml`` with the entry point,
``README.md``, ``src/tether_NAME/`` with a working example component and ``py.typed``,
``tests/`` using tether's pytest plugin and, for session stores, the contract suite of
:mod:`tether.testing`). The result installs and passes its own tests as written.

Templates live in ``templates/<kind>/`` (and ``templates/common/``) as text files whose
names and contents use the placeholders of :class:`Names`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

from tether.errors import TetherError

__all__ = ["KINDS", "Kind", "Names", "PluginScaffoldError", "new_plugin"]

Kind = Literal["tool", "provider", "kb-backend", "session-store"]
KINDS: tuple[Kind, ...] = get_args(Kind)
"""What ``--kind`` accepts."""

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


class PluginScaffoldError(TetherError):
    """The plugin cannot be written: a bad name or kind, or the directory is taken."""


@dataclass(frozen=True)
class Names:
    """The names a plugin called ``name`` uses, and their placeholders in templates.

    ``name`` is the component's and entry point's name (``weather``), ``ident`` its
    Python identifier form (``weather``, ``my_store`` for ``my-store``), ``distribution``
    ``tether-<name>``, ``package`` ``tether_<ident>``, ``title`` a class-name prefix
    (``MyStore``).
    """

    name: str

    @property
    def ident(self) -> str:
        return self.name.replace("-", "_")

    @property
    def distribution(self) -> str:
        return f"tether-{self.name}"

    @property
    def package(self) -> str:
        return f"tether_{self.ident}"

    @property
    def title(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("-"))

    def render(self, text: str) -> str:
        from tether import __version__

        major_minor = ".".join(__version__.split(".")[:2])
        for placeholder, value in (
            ("__DISTRIBUTION__", self.distribution),
            ("__PACKAGE__", self.package),
            ("__IDENT__", self.ident),
            ("__TITLE__", self.title),
            ("__NAME__", self.name),
            ("__TETHER_VERSION__", major_minor),
        ):
            text = text.replace(placeholder, value)
        return text


def _check(name: str, kind: str) -> Names:
    if not _NAME.match(name):
        raise PluginScaffoldError(
            f"{name!r} is not a usable plugin name. Use lowercase letters and digits, "
            "words joined by single hyphens, starting with a letter (e.g. weather, my-store); "
            "the distribution will be tether-<name>."
        )
    if name.startswith("tether"):
        raise PluginScaffoldError(
            f"Leave out the tether prefix: `tether plugin new {name.removeprefix('tether-')}` "
            f"makes the distribution tether-{name.removeprefix('tether-')}."
        )
    if kind not in KINDS:
        raise PluginScaffoldError(f"Unknown kind {kind!r}; choose one of {', '.join(KINDS)}.")
    return Names(name)


def _templates(kind: str) -> list[tuple[str, str]]:
    """(relative path with placeholders, text) of the templates of ``kind``."""
    root = resources.files(__package__) / "templates"
    found: list[tuple[str, str]] = []

    def walk(node: resources.abc.Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".tmpl"):
                found.append((prefix + child.name.removesuffix(".tmpl"), child.read_text("utf-8")))

    walk(root / "common", "")
    walk(root / kind, "")
    return found


#: The tether distribution a plugin of each kind depends on: a knowledge-base backend
#: implements the protocol of the knowledge base, which is a distribution of its own.
_REQUIREMENT = {"kb-backend": "tether[kb]"}


def new_plugin(name: str, kind: str, parent: Path) -> Path:
    """Write the distribution ``tether-<name>`` of ``kind`` into ``parent``; return its
    directory.

    :raises PluginScaffoldError: the name or kind is not valid, or
        ``parent/tether-<name>`` exists already (nothing is written then).
    """
    names = _check(name, kind)
    target = parent / names.distribution
    if target.exists():
        raise PluginScaffoldError(
            f"{target} exists already. Choose another name or directory (--dir), or remove it."
        )
    files = [
        (
            names.render(path),
            names.render(text).replace("__TETHER__", _REQUIREMENT.get(kind, "tether")),
        )
        for path, text in _templates(kind)
    ]
    staging = parent / f".{names.distribution}.partial"
    try:
        for relative, text in files:
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        staging.rename(target)
    except OSError as exc:
        raise PluginScaffoldError(f"Cannot write {target}: {exc.strerror or exc}.") from exc
    finally:
        if staging.exists():
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    return target
