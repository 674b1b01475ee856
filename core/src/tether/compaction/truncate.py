"""The ``truncate`` strategy: drop the oldest whole turns, without a model call."""

from __future__ import annotations

from ..messages import Message
from ..tokens import estimate_context, estimate_message, estimate_request
from .base import CompactionContext, CompactionResult
from .boundaries import clip_result_text, tail_start

__all__ = ["TruncateStrategy", "estimate", "fit_to_budget"]


class TruncateStrategy:
    """When the estimated prompt passes ``threshold`` of the context window, drop the
    oldest messages, cutting at a clean boundary (a turn start where it costs little),
    until the prompt is at most ``target`` of the window.

    Dropped history is gone: use ``summarize`` to keep what mattered in it. If even the
    newest tool round does not fit, its longest tool results are shortened in the middle
    (with a note saying so) rather than failing the run.

    :param threshold: share of the context window that triggers compaction (0-1].
    :param target: share of the window to shrink to; below ``threshold``.
    """

    name = "truncate"

    def __init__(self, *, threshold: float = 0.6, target: float = 0.4) -> None:
        if not 0 < threshold <= 1 or not 0 < target < 1:
            raise ValueError(
                f"truncate: threshold must be in (0, 1] and target in (0, 1); got {threshold}, {target}."
            )
        self.threshold = threshold
        self.target = min(target, threshold)

    async def compact(self, context: CompactionContext) -> CompactionResult | None:
        window = context.capabilities.context_window
        before = estimate(context)
        if not context.force and before < self.threshold * window:
            return None
        budget = int(self.target * window)
        if context.force:
            budget = min(budget, int(before * 0.7))
        kept = fit_to_budget(context, budget)
        if kept is None:
            return None
        after = estimate_request(context.system, context.tools, kept)
        return CompactionResult(messages=kept, tokens_before=before, tokens_after=after)


def fit_to_budget(context: CompactionContext, budget: int) -> list[Message] | None:
    """The newest clean tail of the history that fits ``budget`` tokens (system prompt
    and tools included), or ``None`` when nothing can be removed."""
    messages = list(context.messages)
    fixed = estimate_request(context.system, context.tools, [])
    costs = [estimate_message(m) for m in messages]
    start = tail_start(messages, costs, max(budget - fixed, 0))
    kept = messages[start:]
    if sum(costs[start:]) + fixed > budget and kept:
        kept = _clip(kept, max(budget - fixed, 1))
    if len(kept) == len(messages) and all(a is b for a, b in zip(kept, messages, strict=True)):
        return None
    return kept


def _clip(messages: list[Message], budget: int) -> list[Message]:
    """Shorten tool results until ``messages`` fits ``budget`` (estimated tokens)."""
    chars = max(budget * 3, 200)
    for _ in range(12):
        clipped = [clip_result_text(m, chars) for m in messages]
        if sum(estimate_message(m) for m in clipped) <= budget or chars <= 200:
            return clipped
        chars //= 2
    return clipped


def estimate(context: CompactionContext) -> int:
    """The prompt size of ``context``, anchored to the provider's last report."""
    return estimate_context(
        context.system,
        context.tools,
        context.messages,
        reported_input_tokens=context.reported_input_tokens,
        reported_messages=context.reported_messages,
    )
