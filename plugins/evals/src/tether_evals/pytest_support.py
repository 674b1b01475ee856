"""A dataset as pytest tests: one parametrised test per case, thresholds as assertions::

    from tether_evals.pytest_support import case_params, check_case

    DATASET = load_dataset("evals/support.yaml")

    @pytest.mark.parametrize("case", case_params(DATASET))
    def test_support(case):
        check_case(DATASET, case, make_agent, trials=3, min_pass_rate=0.67)

Nothing is added to pytest unless a test module imports this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from .dataset import Case, Dataset
from .report import CaseSummary
from .runner import AgentFactory, run_eval

__all__ = ["case_params", "check_case"]


def case_params(dataset: Dataset) -> list[Any]:
    """One ``pytest.param`` per case, with the case id as the test id and each tag as a
    mark-free keyword (select with ``-k``)."""
    return [pytest.param(case, id=case.id) for case in dataset.cases]


def check_case(
    dataset: Dataset,
    case: Case,
    agent: AgentFactory,
    *,
    trials: int = 1,
    min_score: float | None = None,
    min_pass_rate: float | None = None,
    models: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> CaseSummary:
    """Run ``case`` ``trials`` times and assert its mean score and pass rate reach the
    thresholds (the arguments, else the dataset's; a pass rate of 1 when neither sets
    one). The assertion message lists every failing check and its reason."""
    report = asyncio.run(
        run_eval(
            dataset.model_copy(update={"cases": [case]}),
            agent,
            trials=trials,
            models=models,
            seed=seed,
            concurrency=trials,
        )
    )
    summary = report.case(case.id)
    limits = dataset.thresholds
    score_floor = min_score if min_score is not None else limits.min_score
    rate_floor = min_pass_rate if min_pass_rate is not None else limits.min_pass_rate
    if score_floor is None and rate_floor is None:
        rate_floor = 1.0
    reasons = "\n".join(
        f"  trial {t.trial}: {s.check} {s.value:.3f} - {s.reason}"
        for t in report.trials
        for s in t.scores
        if not s.passed
    ) + "".join(f"\n  trial {t.trial}: {t.error}" for t in report.trials if t.error)
    if score_floor is not None:
        assert summary.mean_score >= score_floor, (
            f"case {case.id}: mean score {summary.mean_score:.3f} < {score_floor:.3f}\n{reasons}"
        )
    if rate_floor is not None:
        assert summary.pass_rate >= rate_floor, (
            f"case {case.id}: pass rate {summary.pass_rate:.3f} < {rate_floor:.3f}\n{reasons}"
        )
    return summary
