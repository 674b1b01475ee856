"""``trajectory``: which tools the agent called, with what, in which order, how often."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from .base import EvalContext, Score, Settings

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import ToolCallRecord, TrialResult

__all__ = ["ExpectedCall", "Trajectory"]


class ExpectedCall(BaseModel):
    """A call that must appear: ``tool``, and arguments that must be among the call's."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def matches(self, call: ToolCallRecord) -> bool:
        return call.name == self.tool and all(
            call.arguments.get(k) == v for k, v in self.arguments.items()
        )


class Trajectory(Settings):
    """Each part given is one sub-check; the score is the share that hold.

    - ``called``: each call (``{tool: read_file, arguments: {path: x}}``) was made;
    - ``never``: none of these tools was called;
    - ``order``: these tools were called in this order (other calls may come between);
    - ``max_calls``: at most this many tool calls in all.
    """

    called: list[ExpectedCall] = Field(default_factory=list)
    never: list[str] = Field(default_factory=list)
    order: list[str] = Field(default_factory=list)
    max_calls: int | None = Field(default=None, ge=0)

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        calls = trial.tool_calls
        failures: list[str] = []
        checks = 0
        for expected in self.called:
            checks += 1
            if not any(expected.matches(c) for c in calls):
                args = f" with {expected.arguments}" if expected.arguments else ""
                failures.append(f"never called {expected.tool}{args}")
        if self.never:
            checks += 1
            used = sorted({c.name for c in calls} & set(self.never))
            if used:
                failures.append(f"called forbidden tool(s): {', '.join(used)}")
        if self.order:
            checks += 1
            names = iter(c.name for c in calls)
            if not all(any(n == wanted for n in names) for wanted in self.order):
                failures.append(
                    f"calls were not in the order {' -> '.join(self.order)} "
                    f"(made: {' -> '.join(c.name for c in calls) or 'none'})"
                )
        if self.max_calls is not None:
            checks += 1
            if len(calls) > self.max_calls:
                failures.append(f"{len(calls)} tool calls, more than {self.max_calls}")
        if checks == 0:
            raise ValueError("a trajectory check needs one of called, never, order, max_calls")
        value = 1.0 - len(failures) / checks
        made = [c.name for c in calls]
        if failures:
            return Score(value, False, "; ".join(failures), {"calls": made})
        return Score(value, True, f"{checks} trajectory check(s) hold", {"calls": made})
