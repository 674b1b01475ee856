"""Core's import graph, read from the source: no cycles, and no module imports from a
layer above its own.

Every import counts, including the lazy ones inside functions (a cycle through a lazy
import still ties the modules together); imports under ``if TYPE_CHECKING:`` do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tether

SRC = Path(tether.__file__).parent

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "infrastructure",
        (
            "tether",
            "tether.hookspecs",
            "tether.scrub",
            "tether.scrub_exceptions",
            "tether.errors",
            "tether.install_hints",
            "tether.renamed",
            "tether.relocated",
            "tether.messages",
            "tether.events",
            "tether.config",
            "tether.cancel",
            "tether.retry",
            "tether.result",
        ),
    ),
    ("provider abstraction", ("tether.provider",)),
    (
        "harness",
        (
            "tether.accounts",
            "tether.arguments",
            "tether.approvals",
            "tether.boundary",
            "tether.config_check",
            "tether.deadlines",
            "tether.early_dispatch",
            "tether.depth",
            "tether.fileio",
            "tether.guard",
            "tether.ledger",
            "tether.nested_streams",
            "tether.images",
            "tether.output",
            "tether.platforms",
            "tether.registry",
            "tether.resolve",
            "tether.run_settings",
            "tether.runner",
            "tether.skills",
            "tether.surrogates",
            "tether.sync_tools",
            "tether.tokens",
            "tether.tool_execution",
            "tether.tool_results",
            "tether.tools",
            "tether.compaction",
            "tether.observe",
            "tether.provenance",
            "tether.run_features",
            "tether.scope",
            "tether.strategies",
            "tether.subagents",
            "tether.subjects",
            "tether.sessions",
        ),
    ),
    ("assembly", ("tether.agent", "tether.builtins", "tether.demo", "tether.plugins")),
    ("interfaces", ("tether.testing",)),
]
"""From the bottom up. A module may import its own layer and the layers below it. A name
covers the module and, for a package, everything inside it (``tether`` itself covers
only its ``__init__``); the most specific name wins. A new module must be placed here."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in SRC.rglob("*.py")}


def _is_type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(module: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    found = set()
    for alias in node.names:
        candidate = f"{target}.{alias.name}"
        found.add(candidate if candidate in MODULES else target)
    return found


def imports_of(module: str) -> set[str]:
    """The core modules ``module`` imports, wherever in it (not for type checking)."""
    path = MODULES[module]
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if _is_type_checking(node):
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(_imported(module, node, path.name == "__init__.py"))
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit([c for c in children if isinstance(c, ast.stmt | ast.excepthandler)])  # type: ignore[misc]

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: imports_of(module) for module in MODULES}


def layer_of(module: str) -> int:
    best: tuple[int, int] | None = None
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            if module == name or (name != "tether" and module.startswith(name + ".")):
                specificity = len(name)
                if best is None or specificity > best[0]:
                    best = (specificity, index)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def _cycles() -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            connect(node)
    return found


def test_the_graph_is_read_from_the_source() -> None:
    assert "tether.messages" in GRAPH["tether.runner"]
    assert "tether.plugins" in GRAPH["tether.agent"]
    assert "tether.demo" in GRAPH["tether.builtins"]  # a lazy import


def test_core_has_no_import_cycle() -> None:
    assert _cycles() == []


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_sessions_do_not_import_tool_execution() -> None:
    sessions = [m for m in GRAPH if m == "tether.sessions" or m.startswith("tether.sessions.")]
    assert sessions and not any("tether.tool_execution" in GRAPH[m] for m in sessions)


PRODUCT = ("tether_cli", "tether_knowledge", "tether_memory", "tether_runlog", "tether_testing")


def test_the_kernel_imports_no_product_distribution() -> None:
    """The kernel reaches the command line, the knowledge base, memory, the run log and
    the test kit only through hooks: no kernel module imports them, lazily or not (the
    old paths are mapped by :mod:`tether.relocated`, which names them only as strings)."""
    found: list[str] = []
    for module, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found += [f"{module} imports {n}" for n in names if n.split(".")[0] in PRODUCT]
    assert found == []
