"""Persistent backends keep their index across processes: a store written here is
reopened by a new Python process, which finds the same passages; and a write by another
process is seen by a store already open here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tether_knowledge.chunking import Chunker
from tether_knowledge.knowledge_base import KnowledgeBase

SUPPORT = Path(__file__).with_name("kb_support.py")

DOCS = {
    "retries.md": "Rate limits are retried.\nBackoff is exponential with jitter.\nThe delay is capped at thirty seconds.\n",
    "sessions.md": "Sessions are JSONL files.\nA writer lock keeps processes apart.\nRepair adds interrupted results.\n",
    "bread.md": "Knead the dough.\nLet it rise.\nBake in a hot oven.\n",
}
QUERIES = ["capped jitter delay", "writer lock", "bake bread dough"]

SCRIPT = textwrap.dedent(
    """
    import asyncio, importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("kb_support", sys.argv[1])
    support = importlib.util.module_from_spec(spec); spec.loader.exec_module(support)
    from pathlib import Path
    from tether_knowledge.chunking import Chunker
    from tether_knowledge.knowledge_base import KnowledgeBase

    async def main():
        kb = KnowledgeBase(support.make_backend(sys.argv[2], Path(sys.argv[3])),
                           support.HashingEmbedder(), chunker=Chunker(max_chars=60, max_lines=2, overlap_lines=0))
        out = {"docs": [d.doc_id for d in kb.documents()], "results": {}}
        for query in json.loads(sys.argv[4]):
            out["results"][query] = [[p.reference, round(p.score, 9)] for p in await kb.search(query, k=3)]
        if len(sys.argv) > 5:
            await kb.add("added-elsewhere.md", sys.argv[5])
        kb.close()
        print(json.dumps(out))
    asyncio.run(main())
    """
)


def _support() -> Any:
    import importlib.util

    module = sys.modules.get("kb_support")
    if module is None:
        spec = importlib.util.spec_from_file_location("kb_support", SUPPORT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["kb_support"] = module
        spec.loader.exec_module(module)
    return module


def _in_new_process(kind: str, directory: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(SUPPORT),
            kind,
            str(directory),
            json.dumps(QUERIES),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kb(kind: str, directory: Path) -> KnowledgeBase:
    support = _support()
    return KnowledgeBase(
        support.make_backend(kind, directory),
        support.HashingEmbedder(),
        chunker=Chunker(max_chars=60, max_lines=2, overlap_lines=0),
    )


@pytest.mark.parametrize("kind", ["sqlite", "chroma"])
async def test_reopened_in_a_new_process_finds_the_same_passages(kind: str, tmp_path: Path) -> None:
    kb = _kb(kind, tmp_path)
    for doc_id, text in DOCS.items():
        await kb.add(doc_id, text)
    await kb.add("bread.md", DOCS["bread.md"] + "Serve warm.\n")  # a replaced document
    expected = {
        q: [[p.reference, round(p.score, 9)] for p in await kb.search(q, k=3)] for q in QUERIES
    }
    kb.close()

    seen = _in_new_process(kind, tmp_path)
    assert seen["docs"] == sorted(DOCS)
    assert seen["results"] == expected
    assert all(seen["results"][q] for q in QUERIES)


@pytest.mark.parametrize("kind", ["sqlite", "chroma"])
async def test_open_store_sees_a_write_from_another_process(kind: str, tmp_path: Path) -> None:
    kb = _kb(kind, tmp_path)
    await kb.add("retries.md", DOCS["retries.md"])
    assert await kb.search("sourdough starter", mode="keyword") == []

    _in_new_process(kind, tmp_path, "A sourdough starter needs feeding.\n")

    found = await kb.search("sourdough starter", k=1, mode="keyword")
    assert [p.doc_id for p in found] == ["added-elsewhere.md"]
    assert [d.doc_id for d in kb.documents()] == ["added-elsewhere.md", "retries.md"]
    kb.close()
