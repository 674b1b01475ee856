"""The in-memory knowledge-base backend passes the shipped backend contract."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tether_knowledge import KnowledgeBackend, MemoryBackend
from tether_testing import KnowledgeBackendContract


class TestMemoryBackend(KnowledgeBackendContract):
    @pytest.fixture
    def backend_factory(self) -> Callable[[], KnowledgeBackend]:
        return MemoryBackend
