"""tether-otel uses only OpenTelemetry's public API (a private name is a bug waiting for
the next OpenTelemetry release): no module it imports from ``opentelemetry`` has a part
starting with ``_``, nor does any name it imports; it reads no ``_`` attribute of what it
imported from there, looks up no ``_`` attribute by name (``getattr(x, "_y")``), and
copies no function's code (``__code__``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
SOURCES = sorted((PACKAGE / "src").rglob("*.py")) + sorted((PACKAGE / "tests").rglob("*.py"))


_LOOKUPS = {"getattr", "hasattr", "setattr", "delattr"}


def private_opentelemetry_imports(source: str) -> list[str]:
    """Each use of a private OpenTelemetry name in ``source`` (see the module docs)."""
    tree = ast.parse(source)
    found = []
    bound: set[str] = set()  # names bound to what was imported from opentelemetry
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported = [(alias.name, "", alias.asname) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported = [(node.module, alias.name, alias.asname) for alias in node.names]
        else:
            continue
        for module, name, asname in imported:
            if module.split(".")[0] != "opentelemetry":
                continue
            bound.add(asname or name or module.split(".")[0])
            parts = [*module.split("."), *([name] if name else [])]
            if any(part.startswith("_") for part in parts):
                found.append(f"{module}.{name}" if name else module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            private = node.attr.startswith("_") and _root(node) in bound
            if private or node.attr == "__code__":
                found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _LOOKUPS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            found.append(ast.unparse(node))
    return found


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_opentelemetry_name_is_imported(path: Path) -> None:
    assert private_opentelemetry_imports(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "line",
    [
        "from opentelemetry.context import _RUNTIME_CONTEXT",
        "from opentelemetry.semconv._incubating.attributes import gen_ai_attributes",
        "import opentelemetry.sdk.trace._internal",
        "from opentelemetry.exporter.otlp.proto.common._internal import trace_encoder",
        "from opentelemetry import context\ncontext._RUNTIME_CONTEXT._current_context",
        "import opentelemetry.context\nopentelemetry.context._RUNTIME_CONTEXT",
        "runtime = getattr(context_module, '_RUNTIME_CONTEXT', None)",
        "code = OTLPSpanExporter.export.__code__",
    ],
)
def test_the_check_sees_each_spelling_of_a_private_import(line: str) -> None:
    assert private_opentelemetry_imports(line) != []


def test_the_check_leaves_public_imports_and_other_projects_alone() -> None:
    source = (
        "from opentelemetry import trace\nfrom tether._x import _y\nimport opentelemetry.sdk\n"
        "self._runs.get(key)\ntrace.get_current_span()"
    )
    assert private_opentelemetry_imports(source) == []
