"""What one trial of one case produced, as evaluators read it and the results file keeps it.

A :class:`TrialResult` is one JSON line of an eval's results file: the run's answer, its
tool calls, usage, cost, time, outcome, the run id (the run's entry in tether's run log),
a compact list of its events, and the scores every check gave it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ScoreRecord", "ToolCallRecord", "TrialResult"]


class ToolCallRecord(BaseModel):
    """One tool call the agent made, in the order the run made them."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    is_error: bool = False


class ScoreRecord(BaseModel):
    """What one check said about one trial: ``value`` in [0, 1] and whether it passed."""

    check: str
    type: str
    value: float = Field(ge=0, le=1)
    passed: bool
    reason: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class TrialResult(BaseModel):
    """One run of one case (trial ``trial`` of the repeated trials)."""

    case_id: str
    trial: int = 0
    seed: int | None = None
    run_id: str = ""
    outcome: str = ""
    output: Any = None
    text: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    duration: float = 0.0
    turns: int = 0
    events: list[dict[str, Any]] = Field(
        default_factory=list, description="The run's events but text deltas, JSON-ready."
    )
    error: str | None = None
    scores: list[ScoreRecord] = Field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def score(self) -> float:
        """The mean of the checks' values (1.0 for a trial nothing checked)."""
        if not self.scores:
            return 1.0 if self.error is None else 0.0
        return sum(s.value for s in self.scores) / len(self.scores)

    @property
    def passed(self) -> bool:
        """Every check passed and the run raised nothing."""
        return self.error is None and all(s.passed for s in self.scores)

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        """The recorded events of one ``type`` (``retry``, ``compaction``, ``tool_end``...)."""
        return [e for e in self.events if e.get("type") == kind]
