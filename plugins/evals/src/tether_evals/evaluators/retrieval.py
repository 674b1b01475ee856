"""``retrieval``: nDCG and recall of what the agent's knowledge-base searches returned."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..metrics import dedupe, ndcg_at, recall_at
from .base import EvalContext, Score, Settings

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["Retrieval", "retrieved_documents"]

_REFERENCE = re.compile(r"^\[\d+\] (?P<reference>.+?) \(score [^)]*\)$", re.MULTILINE)


def retrieved_documents(trial: TrialResult, tool: str = "kb_search") -> list[str]:
    """Document ids in the order the ``tool`` calls of ``trial`` returned them (each
    passage line ``[n] DOC:START-END (score s)``, as the ``kb_search`` tool writes it)."""
    found = []
    for call in trial.tool_calls:
        if call.name == tool and not call.is_error:
            for match in _REFERENCE.finditer(call.result):
                found.append(match.group("reference").rsplit(":", 1)[0])
    return dedupe(found)


class Retrieval(Settings):
    """Ranks the documents the run's ``tool`` searches returned against the relevant ones
    (``relevant``, default the case's ``expected["relevant"]``): the value is
    ``metric`` at ``k`` (``ndcg`` or ``recall``), passed when it reaches ``threshold``.
    Both metrics are kept in the details."""

    tool: str = "kb_search"
    k: int = Field(default=10, ge=1)
    metric: Literal["ndcg", "recall"] = "ndcg"
    threshold: float = Field(default=0.5, ge=0, le=1)
    relevant: list[str] | None = None

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        relevant = self.relevant if self.relevant is not None else case.expected.get("relevant")
        if not relevant:
            raise ValueError(
                f"the retrieval check of case {case.id!r} has no `relevant` documents and the "
                "case no `expected.relevant` list"
            )
        ranked = retrieved_documents(trial, self.tool)
        ndcg, recall = ndcg_at(ranked, set(relevant), self.k), recall_at(ranked, relevant, self.k)
        value = ndcg if self.metric == "ndcg" else recall
        details = {
            f"ndcg@{self.k}": ndcg,
            f"recall@{self.k}": recall,
            "retrieved": ranked[: self.k],
        }
        verdict = f"{self.metric}@{self.k} = {value:.3f}"
        return Score(value, value >= self.threshold, verdict, details)
