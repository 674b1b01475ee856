"""``budget``: what the run cost in dollars, tokens, turns and time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from .base import EvalContext, Score, Settings

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["Budget"]


class Budget(Settings):
    """Every limit given holds. ``max_cost`` (dollars) fails a run whose cost is unknown
    (the model's pricing is not in the catalogue), since it cannot be shown to hold.
    ``max_seconds`` is the run's wall time. The score is the share of limits kept."""

    max_cost: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_turns: int | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, gt=0)

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        measured: dict[str, float | None] = {
            "max_cost": trial.cost,
            "max_tokens": trial.total_tokens,
            "max_input_tokens": trial.input_tokens,
            "max_output_tokens": trial.output_tokens,
            "max_turns": trial.turns,
            "max_seconds": trial.duration,
        }
        limits = {k: v for k, v in self.model_dump().items() if v is not None}
        if not limits:
            raise ValueError("a budget check needs at least one limit (max_cost, max_tokens, ...)")
        over = []
        for key, limit in limits.items():
            actual = measured[key]
            if actual is None:
                over.append(f"{key[4:]} unknown (limit {limit})")
            elif actual > limit:
                over.append(f"{key[4:]} {actual:g} > {limit:g}")
        value = 1.0 - len(over) / len(limits)
        details = {k[4:]: measured[k] for k in limits}
        if over:
            return Score(value, False, "over budget: " + "; ".join(over), details)
        return Score(value, True, "within budget", details)
