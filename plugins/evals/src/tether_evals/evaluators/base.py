"""The evaluator protocol: settings in, a :class:`Score` per trial out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from tether import Provider

    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["EvalContext", "Evaluator", "Score", "Settings", "output_object"]


@dataclass(frozen=True, slots=True)
class Score:
    """An evaluator's verdict on one trial: ``value`` in [0, 1], ``passed``, why, and any
    details a report should keep (a judge's reasoning, the metrics behind a value)."""

    value: float
    passed: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise ValueError(f"A score's value must be within [0, 1], got {self.value}.")

    @classmethod
    def of(cls, passed: bool, reason: str = "", **details: Any) -> Score:
        """A pass/fail verdict (1.0 or 0.0)."""
        return cls(1.0 if passed else 0.0, passed, reason, details)


@dataclass(frozen=True, slots=True)
class EvalContext:
    """What an evaluator may use beyond the trial: the models the eval was given by name
    (a judge's ``model: judge`` resolves here first) and the eval's seed."""

    models: Mapping[str, str | Provider] = field(default_factory=dict)
    seed: int | None = None

    def model(self, name: str) -> str | Provider:
        """The model named ``name`` in the eval's models, else ``name`` as a model string."""
        return self.models.get(name, name)


@runtime_checkable
class Evaluator(Protocol):
    """Anything with ``async evaluate(trial, case, context) -> Score``."""

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score: ...


class Settings(BaseModel):
    """Base for evaluators whose settings are pydantic fields (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def output_object(output: Any) -> Any:
    """A trial's output as plain data: a pydantic model dumped, JSON text parsed, else as is."""
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if isinstance(output, str):
        try:
            return json.loads(output)
        except json.JSONDecodeError:
            return output
    return output
