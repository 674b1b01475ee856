"""The SQLite knowledge-base backend passes the shipped backend contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tether.knowledge import KnowledgeBackend
from tether.testing import KnowledgeBackendContract
from tether_sqlite.backend import SqliteBackend


class TestSqliteBackend(KnowledgeBackendContract):
    @pytest.fixture
    def backend_factory(self, tmp_path: Path) -> Callable[[], KnowledgeBackend]:
        return lambda: SqliteBackend(tmp_path / "kb.sqlite3")
