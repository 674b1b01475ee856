"""Comparing two evals of the same cases: which cases changed, and whether the change in
scores is more than noise (:func:`tether_evals.stats.paired_bootstrap`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .report import EvalReport
from .stats import paired_bootstrap

__all__ = ["CaseChange", "Comparison", "compare_reports"]

Change = Literal["fixed", "broken", "better", "worse", "same"]


class CaseChange(BaseModel):
    """One case in both evals: its mean scores, pass rates, and how it changed."""

    case_id: str
    score_a: float
    score_b: float
    pass_rate_a: float
    pass_rate_b: float
    change: Change

    @property
    def delta(self) -> float:
        return self.score_b - self.score_a


class Comparison(BaseModel):
    """B against A over the cases both ran."""

    name_a: str
    name_b: str
    cases: list[CaseChange]
    only_a: list[str]
    only_b: list[str]
    mean_a: float
    mean_b: float
    mean_difference: float
    low: float
    high: float
    confidence: float
    p_value: float
    resamples: int
    method: str
    verdict: str

    @property
    def changed(self) -> list[CaseChange]:
        return [c for c in self.cases if c.change != "same"]


def _change(a_score: float, b_score: float, a_pass: float, b_pass: float) -> Change:
    if a_pass < 1 <= b_pass:
        return "fixed"
    if b_pass < 1 <= a_pass:
        return "broken"
    if abs(b_score - a_score) < 1e-9:
        return "same"
    return "better" if b_score > a_score else "worse"


def compare_reports(
    a: EvalReport, b: EvalReport, *, resamples: int = 10_000, confidence: float = 0.95
) -> Comparison:
    """Pair ``a`` and ``b`` by case id and test the difference of their mean scores."""
    a_cases = {c.case_id: c for c in a.cases}
    b_cases = {c.case_id: c for c in b.cases}
    shared = [cid for cid in a_cases if cid in b_cases]
    changes = [
        CaseChange(
            case_id=cid,
            score_a=a_cases[cid].mean_score,
            score_b=b_cases[cid].mean_score,
            pass_rate_a=a_cases[cid].pass_rate,
            pass_rate_b=b_cases[cid].pass_rate,
            change=_change(
                a_cases[cid].mean_score,
                b_cases[cid].mean_score,
                a_cases[cid].pass_rate,
                b_cases[cid].pass_rate,
            ),
        )
        for cid in shared
    ]
    test = paired_bootstrap(
        [c.score_a for c in changes],
        [c.score_b for c in changes],
        resamples=resamples,
        confidence=confidence,
    )
    n = len(changes) or 1
    return Comparison(
        name_a=a.dataset,
        name_b=b.dataset,
        cases=changes,
        only_a=[cid for cid in a_cases if cid not in b_cases],
        only_b=[cid for cid in b_cases if cid not in a_cases],
        mean_a=sum(c.score_a for c in changes) / n,
        mean_b=sum(c.score_b for c in changes) / n,
        mean_difference=test.mean_difference,
        low=test.low,
        high=test.high,
        confidence=test.confidence,
        p_value=test.p_value,
        resamples=test.resamples,
        method=test.method,
        verdict=test.verdict,
    )
