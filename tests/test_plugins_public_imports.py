"""Plugins and integrations stand on public ground: every name they import from
``tether`` is exported by a module listed as plugin API in docs/plugins.md, so core can
reorganise its private modules without breaking an installed plugin."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The modules a plugin may import from, each with an ``__all__`` (kept in step with the
# "What a plugin may import" section of docs/plugins.md).
PUBLIC_MODULES = (
    "tether",
    "tether.arguments",
    "tether.boundary",
    "tether.cli",  # deprecated path of tether_cli, still public through 0.x
    "tether.config",
    "tether.errors",
    "tether.events",
    "tether.install_hints",
    "tether.knowledge",  # deprecated path of tether_knowledge, still public through 0.x
    "tether.messages",
    "tether.observe",
    "tether.provenance",
    "tether.provider",
    "tether.registry",
    "tether.resolve",
    "tether.retry",
    "tether.scrub",
    "tether.sessions",
    "tether.sessions.versioned",
    "tether.sessions.waits",
    "tether.subjects",
    "tether.testing",
    "tether.tokens",
    "tether.tool_execution",
    "tether.tools",
)

#: The product distributions that left the kernel (the command line, the knowledge base,
#: memory, the run log, the test kit) are released with it, version for version, and
#: still use its inner modules; the rule is for plugins.
PRODUCT = ("cli", "knowledge", "memory", "runlog", "testing")

SOURCES = sorted(
    path
    for path in [*ROOT.glob("plugins/*/src/**/*.py"), *ROOT.glob("contrib/*/src/**/*.py")]
    if path.relative_to(ROOT).parts[:2] not in {("plugins", name) for name in PRODUCT}
)


def _exported(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


def private_imports(source: str) -> list[str]:
    """Each ``module.name`` imported from tether that is not public plugin API (a public
    module itself, as in ``from tether import errors``, is)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module
            if module != "tether" and not module.startswith("tether."):
                continue
            if module not in PUBLIC_MODULES:
                found += [f"{module}.{alias.name}" for alias in node.names]
                continue
            exported = _exported(module)
            found += [
                f"{module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_")
                or (alias.name not in exported and f"{module}.{alias.name}" not in PUBLIC_MODULES)
            ]
        elif isinstance(node, ast.Import):
            found += [
                alias.name
                for alias in node.names
                if alias.name.startswith("tether.") and alias.name not in PUBLIC_MODULES
            ]
    return found


def test_every_public_module_declares_what_it_exports() -> None:
    for module in PUBLIC_MODULES:
        assert _exported(module), f"{module} has an empty __all__"


def test_the_documented_list_matches() -> None:
    docs = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = docs.split("## What a plugin may import", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{module}`" in section for module in PUBLIC_MODULES)


def test_the_check_catches_private_names() -> None:
    source = (
        "from tether.errors import ProviderError, _status_family\n"
        "from tether.hookspecs import hookimpl\n"
        "import tether.runner\n"
        "from tether import Agent, errors, runner\n"
        "from tether_openai.errors import map_error\n"
    )
    assert private_imports(source) == [
        "tether.errors._status_family",
        "tether.hookspecs.hookimpl",
        "tether.runner",
        "tether.runner",
    ]


def test_sources_are_found() -> None:
    packages = {path.relative_to(ROOT).parts[1] for path in SOURCES}
    assert {"anthropic", "openai", "google", "tools", "sqlite", "chroma"} <= packages
    assert {"postgres", "redis", "minilm", "mcp", "dbos", "otel"} <= packages


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_plugins_import_only_public_names(path: Path) -> None:
    assert private_imports(path.read_text(encoding="utf-8")) == []
