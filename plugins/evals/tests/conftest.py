"""Shared helpers for the tether-evals tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tether_evals import Dataset, load_dataset

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "evals"


def load_module(path: Path) -> ModuleType:
    """Import a Python file by path (an example's agent module)."""
    spec = importlib.util.spec_from_file_location(f"_eval_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def example_agent() -> ModuleType:
    """A fresh import of the example's agent module (its scripts may be edited)."""
    return load_module(EXAMPLE / "agent.py")


@pytest.fixture
def example_dataset() -> Dataset:
    return load_dataset(EXAMPLE / "support.yaml")
