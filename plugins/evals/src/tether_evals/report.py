"""Summaries of an eval: per case (pass rate, pass@k, mean and spread of the score) and
overall, with the thresholds that decide whether the eval passed.

A case *passes a trial* when every check passed and the run raised nothing; its score in
a trial is the mean of its checks' values. ``pass@k`` is the chance that at least one of
``k`` trials drawn from the ``n`` run passes, with the unbiased estimator of Chen et al.
(2021): ``1 - C(n - c, k) / C(n, k)`` for ``c`` passing trials.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .dataset import Dataset, Thresholds
from .errors import EvalError
from .results import TrialResult

__all__ = ["CaseSummary", "EvalReport", "build_report", "load_report", "pass_at_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The probability that one of ``k`` of ``n`` trials (``c`` of them passing) passes."""
    if not 0 < k <= n:
        raise ValueError(f"k must be within 1..{n}, got {k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class CaseSummary(BaseModel):
    """One case over its trials."""

    case_id: str
    tags: list[str] = Field(default_factory=list)
    trials: int
    passes: int
    pass_rate: float
    pass_at_k: dict[int, float]
    mean_score: float
    stdev_score: float
    checks: dict[str, float] = Field(description="Mean value of each check over the trials.")
    mean_cost: float | None = None
    mean_seconds: float = 0.0
    run_ids: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.passes == self.trials


class EvalReport(BaseModel):
    """An eval's outcome: its settings, every case's summary, every trial and the totals.

    Written as JSON by ``tether eval run --json``; :func:`load_report` reads it back (or
    a results JSONL file) for ``tether eval compare``.
    """

    dataset: str
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    settings: dict[str, Any] = Field(default_factory=dict)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    cases: list[CaseSummary]
    trials: list[TrialResult]
    pass_rate: float
    mean_score: float
    checks: dict[str, float]
    total_cost: float | None = None

    def case(self, case_id: str) -> CaseSummary:
        for summary in self.cases:
            if summary.case_id == case_id:
                return summary
        raise KeyError(case_id)

    def failures(self, thresholds: Thresholds | None = None) -> list[str]:
        """Which thresholds (``thresholds``, else the dataset's) the eval fell short of,
        one sentence each; empty when it met them all."""
        limits = thresholds or self.thresholds
        found = []
        if limits.min_pass_rate is not None and self.pass_rate < limits.min_pass_rate:
            found.append(f"pass rate {self.pass_rate:.3f} is below {limits.min_pass_rate:.3f}")
        if limits.min_score is not None and self.mean_score < limits.min_score:
            found.append(f"mean score {self.mean_score:.3f} is below {limits.min_score:.3f}")
        for label, minimum in limits.evaluators.items():
            if label not in self.checks:
                found.append(f'no check named "{label}" ran (checks: {", ".join(self.checks)})')
            elif self.checks[label] < minimum:
                found.append(
                    f'check "{label}" scored {self.checks[label]:.3f}, below {minimum:.3f}'
                )
        return found


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _summarise(case_id: str, tags: list[str], trials: list[TrialResult]) -> CaseSummary:
    scores = [t.score for t in trials]
    passes = sum(t.passed for t in trials)
    labels = dict.fromkeys(s.check for t in trials for s in t.scores)
    costs = [t.cost for t in trials]
    return CaseSummary(
        case_id=case_id,
        tags=tags,
        trials=len(trials),
        passes=passes,
        pass_rate=passes / len(trials),
        pass_at_k={k: pass_at_k(len(trials), passes, k) for k in range(1, len(trials) + 1)},
        mean_score=_mean(scores),
        stdev_score=statistics.stdev(scores) if len(scores) > 1 else 0.0,
        checks={
            label: _mean(s.value for t in trials for s in t.scores if s.check == label)
            for label in labels
        },
        mean_cost=None if any(c is None for c in costs) else _mean(c or 0.0 for c in costs),
        mean_seconds=_mean(t.duration for t in trials),
        run_ids=[t.run_id for t in sorted(trials, key=lambda t: t.trial) if t.run_id],
        errors=[t.error for t in trials if t.error],
    )


def build_report(
    dataset: Dataset | None,
    trials: Iterable[TrialResult],
    *,
    settings: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> EvalReport:
    """The report of ``trials`` (cases in the dataset's order, or first-seen order)."""
    by_case: dict[str, list[TrialResult]] = {}
    for trial in sorted(trials, key=lambda t: (t.case_id, t.trial)):
        by_case.setdefault(trial.case_id, []).append(trial)
    order = [c.id for c in dataset.cases] if dataset is not None else list(by_case)
    tags = {c.id: c.tags for c in dataset.cases} if dataset is not None else {}
    cases = [_summarise(cid, tags.get(cid, []), by_case[cid]) for cid in order if cid in by_case]
    labels = dict.fromkeys(label for c in cases for label in c.checks)
    costs = [c.mean_cost for c in cases]
    return EvalReport(
        dataset=name or (dataset.name if dataset is not None else "results"),
        settings=dict(settings or {}),
        thresholds=dataset.thresholds if dataset is not None else Thresholds(),
        cases=cases,
        trials=[t for cid in order for t in by_case.get(cid, [])],
        pass_rate=_mean(c.pass_rate for c in cases),
        mean_score=_mean(c.mean_score for c in cases),
        checks={
            label: _mean(c.checks[label] for c in cases if label in c.checks) for label in labels
        },
        total_cost=None
        if any(c is None for c in costs)
        else sum(c.mean_cost * c.trials for c in cases if c.mean_cost is not None),
    )


def load_report(path: str | Path) -> EvalReport:
    """A report from its JSON file, or built from a results JSONL file."""
    from .runner import read_results

    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return build_report(None, read_results(path), name=path.stem)
    try:
        return EvalReport.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalError(f"Cannot read the report {path}: {exc.strerror or exc}.") from exc
    except ValueError as exc:
        raise EvalError(
            f"{path} is not an eval report written by `tether eval run --json` "
            f"(nor a results .jsonl file): {str(exc).splitlines()[0]}"
        ) from exc
