"""How to install one of tether's own distributions, for error messages and docs.

tether and its plugins are not published on a package index yet: ``pip install
tether-openai`` finds nothing (or someone else's package). Every install hint is a
command that works in a clone of the repository, where the README's environment is made
by uv: ``uv pip install ./plugins/openai`` (``uv sync --all-packages`` installs them all).
"""

from __future__ import annotations

__all__ = ["CONTRIB", "clone_install", "source_dir"]

CONTRIB = frozenset({"dbos", "mcp", "otel", "serve"})
"""The distributions kept under ``contrib/`` (the others are under ``plugins/``)."""


def source_dir(distribution: str) -> str | None:
    """``./plugins/openai`` for ``tether-openai``, ``./core`` for ``tether``; ``None`` for
    a distribution that is not tether's."""
    if distribution == "tether":
        return "./core"
    if not distribution.startswith("tether-"):
        return None
    name = distribution.removeprefix("tether-")
    return f"./{'contrib' if name in CONTRIB else 'plugins'}/{name}"


def clone_install(distribution: str, extras: str = "") -> str:
    """The command installing ``distribution`` (with ``extras``, e.g. ``"azure"``, also
    accepted written ``tether-openai[azure]``) from a clone of tether, run at its root: ``uv pip install './plugins/openai[azure]'``.
    A distribution that is not tether's is installed from the index as usual."""
    if "[" in distribution and distribution.endswith("]"):
        distribution, _, named = distribution[:-1].partition("[")
        extras = extras or named
    where = source_dir(distribution) or distribution
    target = f"{where}[{extras}]" if extras else where
    quoted = f"'{target}'" if extras else target
    return f"uv pip install {quoted}"
