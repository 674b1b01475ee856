"""Two agent configurations compared on a real retrieval dataset (BEIR SciFact, read from
``shared/data/scifact`` beside the repository; its licence keeps it out of the repo): the
agent answers claims through the knowledge base's ``kb_search`` tool, the ``retrieval``
check scores nDCG@10 of what it found, and ``tether eval compare`` reports the paired
bootstrap interval of the difference.

Configuration A returns 1 passage per search, B returns 10 from the same ranking, so B's
nDCG@10 is at least A's on every claim and higher wherever a relevant abstract ranks 2nd
to 10th: the comparison must call B better, with an interval above zero.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

import tether
from tether.knowledge import KnowledgeBase, MemoryBackend
from tether.provider import ModelRequest
from tether.testing import Reply, ScriptedProvider, call
from tether.testing.cli import run_tether
from tether_evals import (
    Case,
    CaseInputs,
    Check,
    Dataset,
    TrialSetup,
    compare_reports,
    comparison_html,
    run_eval,
)

QUERIES, DISTRACTORS = 100, 600


def _scifact() -> Path | None:
    """``shared/data/scifact`` in the nearest ancestor of this file that has it."""
    configured = os.environ.get("TETHER_SCIFACT_DIR")
    if configured:
        return Path(configured)
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data" / "scifact"
        if (candidate / "corpus.jsonl").is_file():
            return candidate
    return None


DATA = _scifact()
pytestmark = pytest.mark.skipif(DATA is None, reason="no shared/data/scifact beside the repo")


def _subset(data: Path) -> tuple[dict[str, str], list[tuple[str, str, list[str]]]]:
    """The first judged test claims, their relevant abstracts and some distractors."""
    judged: dict[str, list[str]] = {}
    for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            judged.setdefault(qid, []).append(doc)
    chosen = sorted(judged, key=int)[:QUERIES]
    claims = {}
    for line in (data / "queries.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["_id"] in chosen:
            claims[row["_id"]] = row["text"]
    wanted = {doc for qid in chosen for doc in judged[qid]}
    corpus: dict[str, str] = {}
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["_id"] in wanted or len(corpus) < DISTRACTORS:
            corpus[row["_id"]] = f"{row['title']}\n{row['text']}"
    return corpus, [(qid, claims[qid], judged[qid]) for qid in chosen]


def _searcher(request: ModelRequest) -> Reply:
    """A model that searches for the claim, then says it is done."""
    last = request.messages[-1]
    if last.role == "user":
        return Reply(tool_calls=[call("kb_search", query=last.text)])
    return Reply(text="I found the abstracts above.")


def test_two_retrieval_configurations_compared_with_a_paired_interval(tmp_path: Path) -> None:
    assert DATA is not None
    corpus, claims = _subset(DATA)
    kb = KnowledgeBase(MemoryBackend())

    async def index() -> None:
        for doc_id, text in corpus.items():
            await kb.add(doc_id, text)

    asyncio.run(index())
    dataset = Dataset(
        name="scifact-subset",
        evaluators=[Check(type="retrieval", k=10, metric="ndcg", threshold=0.5)],
        cases=[
            Case(id=f"q{qid}", inputs=CaseInputs(prompt=claim), expected={"relevant": docs})
            for qid, claim, docs in claims
        ],
    )

    def configuration(passages: int):  # type: ignore[no-untyped-def]
        def make(setup: TrialSetup) -> tether.Agent:
            return tether.Agent(
                ScriptedProvider(handler=_searcher),
                tools=[kb.as_tool(default_k=passages)],
                config=tether.Config(),
                entry_points=False,
                skills=False,
            )

        return make

    a = asyncio.run(run_eval(dataset.model_copy(update={"name": "k1"}), configuration(1)))
    b = asyncio.run(run_eval(dataset.model_copy(update={"name": "k10"}), configuration(10)))
    assert len(a.trials) == len(b.trials) == QUERIES
    assert all(t.error is None and t.tool_calls[0].name == "kb_search" for t in b.trials)
    assert 0.3 < b.mean_score <= 1.0  # BM25 on SciFact: about 0.65 on the full corpus

    comparison = compare_reports(a, b)
    assert comparison.mean_difference == pytest.approx(b.mean_score - a.mean_score)
    assert all(c.delta >= 0 for c in comparison.cases)
    assert comparison.changed and all(c.change in ("better", "fixed") for c in comparison.changed)
    assert 0 < comparison.low <= comparison.mean_difference <= comparison.high
    assert comparison.verdict == "better"
    html = comparison_html(comparison)
    assert f"[{comparison.low:+.3f}, {comparison.high:+.3f}]" in html

    (tmp_path / "a.json").write_text(a.model_dump_json())
    (tmp_path / "b.json").write_text(b.model_dump_json())
    shown = run_tether(
        tmp_path,
        "eval", "compare", "a.json", "b.json", "--json", "comparison.json",
        plugins="evals",
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert f"[{comparison.low:+.4f}, {comparison.high:+.4f}]" in shown.stdout
    assert "paired bootstrap" in shown.stdout and "better" in shown.stdout
    saved = json.loads((tmp_path / "comparison.json").read_text())
    assert saved["low"] == pytest.approx(comparison.low) and saved["verdict"] == "better"
