"""``equals``, ``contains`` and ``regex``: checks of the answer's text."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from .base import EvalContext, Score, Settings

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["Contains", "Equals", "Regex"]


def _expected(value: str | None, case: Case, kind: str) -> str:
    if value is not None:
        return value
    if case.expected_output is None:
        raise ValueError(
            f'the "{kind}" check of case {case.id!r} has no `value` and the case no '
            "`expected_output` to compare with"
        )
    return case.expected_output


class Equals(Settings):
    """The answer equals ``value`` (default: the case's ``expected_output``), surrounding
    whitespace ignored; ``ignore_case`` compares case-insensitively."""

    value: str | None = None
    ignore_case: bool = False

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        expected, actual = _expected(self.value, case, "equals").strip(), trial.text.strip()
        if self.ignore_case:
            expected, actual = expected.casefold(), actual.casefold()
        if expected == actual:
            return Score.of(True, "the answer equals the expected text")
        return Score.of(False, f"expected {expected[:80]!r}, got {actual[:80]!r}")


class Contains(Settings):
    """The answer contains each of ``values`` (or ``value``, default the case's
    ``expected_output``); the score is the share found, passed when all are."""

    value: str | None = None
    values: list[str] = Field(default_factory=list)
    ignore_case: bool = False

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        wanted = self.values or [_expected(self.value, case, "contains")]
        text = trial.text.casefold() if self.ignore_case else trial.text
        missing = [w for w in wanted if (w.casefold() if self.ignore_case else w) not in text]
        value = 1.0 - len(missing) / len(wanted)
        if not missing:
            return Score(value, True, "every expected text is in the answer")
        return Score(value, False, "missing from the answer: " + ", ".join(map(repr, missing)))


class Regex(Settings):
    """The answer matches ``pattern`` (searched anywhere; ``full`` for the whole answer)."""

    pattern: str
    ignore_case: bool = False
    full: bool = False

    @model_validator(mode="after")
    def _compiles(self) -> Regex:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"the pattern {self.pattern!r} is not a valid regex: {exc}") from exc
        return self

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        flags = re.IGNORECASE if self.ignore_case else 0
        find = re.fullmatch if self.full else re.search
        match = find(self.pattern, trial.text.strip() if self.full else trial.text, flags)
        if match:
            return Score.of(True, f"matched {match.group(0)[:80]!r}")
        return Score.of(False, f"the answer does not match /{self.pattern}/")
