"""Entry points are read once per process and reused by every plugin manager."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

import tether.plugins
from tether.plugins import PluginManager, forget_entry_points


def test_every_manager_reuses_one_reading_of_the_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[str] = []
    original = metadata.entry_points

    def counting(**kwargs: Any) -> Any:
        reads.append(kwargs.get("group", ""))
        return original(**kwargs)

    monkeypatch.setattr(tether.plugins.metadata, "entry_points", counting)
    forget_entry_points()
    managers = [PluginManager() for _ in range(5)]
    assert reads == ["tether"]
    # Every manager still sees and registers every installed plugin.
    names = [sorted(info.name for info in m.plugins) for m in managers]
    assert all(n == names[0] for n in names) and "compaction" in names[0] and len(names[0]) > 1

    forget_entry_points()
    PluginManager()
    assert reads == ["tether", "tether"]
