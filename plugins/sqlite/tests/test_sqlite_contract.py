"""The SQLite knowledge-base backend passes the shipped backend contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tether_knowledge import KnowledgeBackend
from tether_sqlite.backend import SqliteBackend
from tether_testing import KnowledgeBackendContract


class TestSqliteBackend(KnowledgeBackendContract):
    @pytest.fixture
    def backend_factory(self, tmp_path: Path) -> Callable[[], KnowledgeBackend]:
        return lambda: SqliteBackend(tmp_path / "kb.sqlite3")
