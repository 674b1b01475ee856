"""A knowledge-base backend written outside tether, in a package of its own, runs the
contract suite tether ships (``tether.testing.KnowledgeBackendContract``) from its own
tests, in a separate pytest process, using only tether's public names."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

BACKEND = '''
"""A small knowledge-base backend: chunks in dicts, TF-IDF keywords, exact vectors."""

import math
from dataclasses import replace

from tether_knowledge import Chunk, DocumentInfo, Tokenizer


class AcmeBackend:
    name = "acme"

    def __init__(self, **settings):
        self._tokenize = Tokenizer("english")
        self._documents = {}
        self._rows = {}

    def get_document(self, doc_id):
        return self._documents.get(doc_id)

    def list_documents(self):
        return [self._documents[d] for d in sorted(self._documents)]

    def put_document(self, info, chunks, vectors):
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors.")
        vectors = vectors if vectors is not None else [None] * len(chunks)
        self._rows[info.doc_id] = [
            (chunk, self._tokenize(chunk.indexed_text), None if v is None else list(v))
            for chunk, v in zip(chunks, vectors)
        ]
        self._documents[info.doc_id] = info

    def delete_document(self, doc_id):
        self._rows.pop(doc_id, None)
        return self._documents.pop(doc_id, None) is not None

    def keyword_search(self, query, limit):
        terms = set(self._tokenize(query))
        rows = [row for rows in self._rows.values() for row in rows]
        frequency = {t: sum(1 for _, words, _ in rows if t in words) for t in terms}
        found = []
        for chunk, words, _ in rows:
            score = sum(
                words.count(t) * math.log(1 + len(rows) / frequency[t])
                for t in terms
                if frequency[t]
            )
            if score > 0:
                found.append(replace(chunk, score=score))
        return sorted(found, key=lambda c: -c.score)[:limit]

    def vector_search(self, vector, limit):
        found = [
            replace(chunk, score=sum(a * b for a, b in zip(vector, stored)))
            for rows in self._rows.values()
            for chunk, _, stored in rows
            if stored is not None
        ]
        return sorted(found, key=lambda c: -c.score)[:limit]

    def close(self):
        self._rows.clear()
'''

TESTS = """
import pytest

from acme_kb import AcmeBackend
from tether_testing import KnowledgeBackendContract


class TestAcmeBackend(KnowledgeBackendContract):
    @pytest.fixture
    def backend_factory(self):
        return AcmeBackend
"""


def test_a_third_party_backend_passes_the_shipped_contract_suite(tmp_path: Path) -> None:
    package = tmp_path / "acme-kb"
    (package / "src" / "acme_kb").mkdir(parents=True)
    (package / "tests").mkdir()
    (package / "src" / "acme_kb" / "__init__.py").write_text(textwrap.dedent(BACKEND))
    (package / "tests" / "test_acme_contract.py").write_text(textwrap.dedent(TESTS))
    (package / "pyproject.toml").write_text(
        '[project]\nname = "acme-kb"\nversion = "0.1.0"\n'
        "[tool.pytest.ini_options]\nasyncio_mode = 'strict'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(package / "src")}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = completed.stdout + completed.stderr
    assert completed.returncode == 0, report
    assert "13 passed" in report, report
