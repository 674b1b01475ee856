"""The Chroma knowledge-base backend passes the shipped backend contract, embedded and
against a real Chroma server on loopback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tether_chroma.backend import ChromaBackend
from tether_knowledge import KnowledgeBackend
from tether_testing import KnowledgeBackendContract


class TestEmbeddedChroma(KnowledgeBackendContract):
    @pytest.fixture
    def backend_factory(self, tmp_path: Path) -> Callable[[], KnowledgeBackend]:
        return lambda: ChromaBackend(tmp_path / "chroma")


class TestChromaServer(KnowledgeBackendContract):
    @pytest.fixture
    def backend_factory(
        self, tmp_path: Path, chroma_server: tuple[str, int]
    ) -> Callable[[], KnowledgeBackend]:
        host, port = chroma_server
        return lambda: ChromaBackend(host=host, port=port, collection=f"t{tmp_path.name[-20:]}")
