"""What a run has used so far: :class:`RunAccounts`, the counters behind ``RunResult``.

A base of :class:`~tether.runner.Run`, so the loop and its features read and update
``run.turns``, ``run.usage`` and ``run.cost`` directly, while the bookkeeping itself (per
response: usage, cost and its breakdown; per batch of tool results: calls and errors;
the totals a result reports) lives here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .events import TurnEnd
from .messages import StopReason, ToolResultBlock, Usage
from .provider import CostBreakdown

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .provider import ModelCapabilities, ModelResponse
    from .run_settings import RunSettings

__all__ = ["RunAccounts"]


class RunAccounts:
    """Counters of one run: model calls, retries, tool calls and errors, tokens, cost."""

    turns: int
    retries: int
    tool_calls: int
    tool_errors: int
    usage: Usage
    cost: float | None
    """``None`` when the model's pricing is unknown."""
    cost_breakdown: CostBreakdown
    stop_reason: StopReason | None
    latency: float
    """Seconds the last successful model call took (its retries included)."""
    first_token: float | None
    """Seconds from sending the last request to its first streamed event."""

    def open_accounts(self, capabilities: ModelCapabilities) -> None:
        self.turns = self.retries = self.tool_calls = self.tool_errors = 0
        self.usage = Usage()
        self.cost = 0.0 if capabilities.pricing is not None else None
        self.cost_breakdown = CostBreakdown()
        self.stop_reason = None
        self.latency, self.first_token = 0.0, None

    def account_response(self, response: ModelResponse, settings: RunSettings) -> TurnEnd:
        """Add one response's usage and cost; the ``TurnEnd`` event reporting it."""
        capabilities = settings.capabilities
        usage = response.usage
        self.usage = self.usage + usage
        cost = None
        if capabilities.pricing is not None:
            self.cost_breakdown += (breakdown := capabilities.pricing.breakdown(usage))
            self.cost = (self.cost or 0.0) + (cost := breakdown.total)
        return TurnEnd(
            model=response.model or settings.model_string,
            stop_reason=response.stop_reason,
            usage=usage,
            latency=self.latency,
            cost=cost,
            time_to_first_token=self.first_token,
        )

    def account_results(self, results: Sequence[ToolResultBlock]) -> None:
        self.tool_calls += len(results)
        self.tool_errors += sum(1 for result in results if result.is_error)

    def totals(self) -> dict[str, Any]:
        """The counters as :class:`~tether.result.RunResult` fields."""
        return {
            "usage": self.usage,
            "cost": self.cost,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "retries": self.retries,
            "stop_reason": self.stop_reason,
            "cost_breakdown": self.cost_breakdown if self.cost is not None else None,
        }
