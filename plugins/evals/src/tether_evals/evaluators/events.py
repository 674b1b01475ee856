"""``events``: checks of what happened during the run, read from its recorded events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from .base import EvalContext, Score, Settings

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["Events"]


class Events(Settings):
    """Counts of the run's events stay within bounds: ``min_retries``/``max_retries``
    (``retry`` events), ``min_compactions``/``max_compactions`` (``compaction``), ``max_tool_errors``
    (``tool_end`` with an error result); ``outcome`` is the outcome the run must end with
    (``completed``, ``limit``, ...). The score is the share of bounds kept."""

    min_retries: int | None = Field(default=None, ge=0)
    max_retries: int | None = Field(default=None, ge=0)
    min_compactions: int | None = Field(default=None, ge=0)
    max_compactions: int | None = Field(default=None, ge=0)
    max_tool_errors: int | None = Field(default=None, ge=0)
    outcome: str | None = None

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        counts = {
            "retries": len(trial.events_of("retry")),
            "compactions": len(trial.events_of("compaction")),
            "tool_errors": sum(1 for e in trial.events_of("tool_end") if e.get("is_error")),
        }
        bounds = [
            ("retries", self.min_retries, self.max_retries),
            ("compactions", self.min_compactions, self.max_compactions),
            ("tool_errors", None, self.max_tool_errors),
        ]
        failures, checks = [], 0
        for name, low, high in bounds:
            if low is not None:
                checks += 1
                if counts[name] < low:
                    failures.append(f"{counts[name]} {name}, fewer than {low}")
            if high is not None:
                checks += 1
                if counts[name] > high:
                    failures.append(f"{counts[name]} {name}, more than {high}")
        if self.outcome is not None:
            checks += 1
            if trial.outcome != self.outcome:
                failures.append(f"ended {trial.outcome or 'with an error'}, not {self.outcome}")
        if checks == 0:
            raise ValueError("an events check needs a bound (max_retries, outcome, ...)")
        value = 1.0 - len(failures) / checks
        if failures:
            return Score(value, False, "; ".join(failures), counts)
        return Score(value, True, f"{checks} event bound(s) hold", counts)
