"""The shape of core's source: size limits that keep the loop readable."""

from __future__ import annotations

import ast
from pathlib import Path

import tether

SRC = Path(tether.__file__).parent


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def test_runner_stays_thin() -> None:
    lines = (SRC / "runner.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 450, f"runner.py has {lines} lines; move a concern out of it"


def test_no_function_in_core_is_over_sixty_lines() -> None:
    long = [
        f"{path.relative_to(SRC)}:{name} ({length} lines)"
        for path in sorted(SRC.rglob("*.py"))
        for name, length in _functions(path)
        if length > 60
    ]
    assert not long, "split these functions: " + ", ".join(long)
