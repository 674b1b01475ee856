"""The ``summarize`` strategy (the default): replace older history by a model-written summary.

After a tool round, when the estimated prompt passes ``threshold`` (60%) of the model's
context window, the history is split at a clean boundary into an older part and a recent
tail of about ``keep_recent`` (20%) of the window. The model summarises the older part
with :data:`SUMMARY_PROMPT` (decisions, open tasks, file paths, user preferences, errors
seen), and the history becomes one clearly marked summary message followed by the tail,
untouched. Because this happens rarely, the prompt prefix stays byte-identical between
compactions, so provider prompt caches keep hitting.

A summary request that would itself overflow the window is split: the older history is
summarised in pieces, each piece together with the summary so far. If the provider still
rejects it as too long, the pieces shrink; if the summary cannot be had at all (the
provider fails, or answers with nothing), the strategy falls back to dropping the oldest
turns like ``truncate``. A session is never left unable to continue.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace

from ..errors import ContextOverflowError, ProviderError
from ..messages import (
    ImageBlock,
    Message,
    MessageMeta,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from ..provider import ModelRequest
from ..tokens import estimate_message, estimate_request, estimate_tokens
from .base import CompactionContext, CompactionResult
from .boundaries import tail_start
from .truncate import estimate, fit_to_budget

__all__ = ["SUMMARY_MARKER", "SUMMARY_PROMPT", "SummarizeStrategy", "is_summary"]

_log = logging.getLogger("tether.compaction")

SUMMARY_MARKER = "[Summary of the earlier conversation, written when it was compacted]"
"""The first line of every summary message; :func:`is_summary` looks for it."""

SUMMARY_SYSTEM = (
    "You write handover notes for an AI agent whose earlier conversation is being "
    "replaced by your summary. The agent will continue the work with only your summary "
    "and the most recent messages, so keep every fact it needs and nothing else."
)

SUMMARY_PROMPT = """Summarise the conversation transcript below for the agent that will continue it.

Write in the second person ("you"), as concise bullet points under these headings, and
skip a heading when there is nothing for it:

1. Goal: what the user wants overall, in their words where it matters.
2. User preferences and constraints: style, tools, things to do or avoid.
3. Decisions made and why.
4. Done so far: what was changed or learned, with exact file paths, commands,
   function names, identifiers, URLs and numbers.
5. Errors seen: what failed, the exact error messages, and whether it was fixed.
6. Open tasks: what remains, in order, including anything promised to the user.

If the transcript starts with an earlier summary, merge it in: keep what still holds,
drop what was superseded. Do not invent anything; do not address the user; do not call
tools. Reply with the summary only.

<transcript>
{transcript}
</transcript>"""

_RESULT_CHARS = 6_000  # of one tool result, in the transcript the summariser reads
_ARGUMENT_CHARS = 2_000


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary written by this strategy."""
    return message.role == "user" and message.text.startswith(SUMMARY_MARKER)


class SummarizeStrategy:
    """Summarise older history with the model; see the module docstring.

    :param threshold: share of the context window that triggers compaction (0-1].
    :param keep_recent: share of the window kept verbatim as the recent tail.
    :param summary_tokens: the most output tokens the summary may take.
    :param prompt: the summary instructions; ``{transcript}`` is replaced by the older
        history rendered as text.
    """

    name = "summarize"

    def __init__(
        self,
        *,
        threshold: float = 0.6,
        keep_recent: float = 0.2,
        summary_tokens: int = 2_048,
        prompt: str = SUMMARY_PROMPT,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"summarize: threshold must be in (0, 1], got {threshold}.")
        if not 0 <= keep_recent < threshold:
            raise ValueError(
                f"summarize: keep_recent must be in [0, threshold), got {keep_recent}."
            )
        if "{transcript}" not in prompt:
            raise ValueError(
                "summarize: the prompt must contain {transcript}, where the history goes."
            )
        self.threshold = threshold
        self.keep_recent = keep_recent
        self.summary_tokens = summary_tokens
        self.prompt = prompt

    async def compact(self, context: CompactionContext) -> CompactionResult | None:
        window = context.capabilities.context_window
        before = estimate(context)
        if not context.force and before < self.threshold * window:
            return None
        messages = list(context.messages)
        costs = [estimate_message(m) for m in messages]
        fixed = estimate_request(context.system, context.tools, [])
        tail_budget = int(self.keep_recent * window)
        if context.force:
            tail_budget //= 2
        split = tail_start(messages, costs, max(tail_budget - fixed, 0))
        if split == 0 or (split == 1 and is_summary(messages[0])):
            return self._fallback(context, before, "there is no older history to summarise")
        summary = await self._summarise(context, messages[:split])
        if summary is None:
            return self._fallback(context, before, "the model did not produce a summary")
        marked = Message(
            role="user",
            content=[TextBlock(text=f"{SUMMARY_MARKER}\n\n{summary.strip()}")],
            meta=MessageMeta(compaction={"strategy": self.name, "replaced_messages": split}),
        )
        kept = [marked, *messages[split:]]
        after = estimate_request(context.system, context.tools, kept)
        if after > 0.9 * window:  # the tail itself is too big: shorten it too
            trimmed = fit_to_budget(_with(context, kept), int(self.threshold * window))
            if trimmed is not None:
                kept = trimmed if trimmed and trimmed[0] is marked else [marked, *trimmed]
                after = estimate_request(context.system, context.tools, kept)
        return CompactionResult(messages=kept, tokens_before=before, tokens_after=after)

    # -- the summary request -----------------------------------------------------------------
    async def _summarise(self, context: CompactionContext, older: Sequence[Message]) -> str | None:
        window = context.capabilities.context_window
        overhead = (
            estimate_tokens(SUMMARY_SYSTEM) + estimate_tokens(self.prompt) + self.summary_tokens
        )
        budget = int(0.8 * window) - overhead
        pieces = [_render(m) for m in older]
        for _ in range(4):
            if budget <= 256:
                return None
            try:
                return await self._summarise_in_pieces(context, pieces, budget)
            except ContextOverflowError:
                budget //= 2  # the provider counts differently than the estimate: smaller pieces
            except ProviderError as exc:
                _log.warning("Compaction could not get a summary from the model: %s", exc)
                return None
        return None

    async def _summarise_in_pieces(
        self, context: CompactionContext, pieces: list[str], budget: int
    ) -> str | None:
        summary: str | None = None
        for group in _group(pieces, budget - self.summary_tokens):
            head = [f"{SUMMARY_MARKER}\n{summary}"] if summary is not None else []
            transcript = "\n\n".join([*head, *group])
            request = ModelRequest(
                model=context.model,
                messages=[Message.user(self.prompt.replace("{transcript}", transcript))],
                system=SUMMARY_SYSTEM,
                max_output_tokens=self.summary_tokens,
                session_id=context.session_id,
                capabilities=context.capabilities,
            )
            response = await context.provider.complete(request)
            text = response.message.text.strip()
            if not text:
                return None
            summary = text
        return summary

    def _fallback(
        self, context: CompactionContext, before: int, why: str
    ) -> CompactionResult | None:
        window = context.capabilities.context_window
        kept = fit_to_budget(context, int(min(self.threshold, 0.5) * window))
        if kept is None:
            return None
        _log.warning(
            "Compaction dropped the oldest %d messages without a summary: %s.",
            len(context.messages) - len(kept),
            why,
        )
        after = estimate_request(context.system, context.tools, kept)
        return CompactionResult(messages=kept, tokens_before=before, tokens_after=after)


def _with(context: CompactionContext, messages: list[Message]) -> CompactionContext:
    """``context`` for a new history: the provider's report covered the old one."""
    return replace(
        context, messages=messages, reported_input_tokens=None, reported_messages=0, force=False
    )


def _group(pieces: list[str], budget: int) -> list[list[str]]:
    """Consecutive pieces in groups of at most ``budget`` estimated tokens (a piece
    larger than that is cut to fit)."""
    groups: list[list[str]] = [[]]
    used = 0
    for piece in pieces:
        cost = estimate_tokens(piece)
        if cost > budget:
            piece = piece[: max(budget * 3, 100)] + "\n[... cut ...]"
            cost = estimate_tokens(piece)
        if used + cost > budget and groups[-1]:
            groups.append([])
            used = 0
        groups[-1].append(piece)
        used += cost
    return [g for g in groups if g]


def _render(message: Message) -> str:
    """One message as transcript text for the summariser."""
    lines: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            lines.append(block.text)
        elif isinstance(block, ToolCallBlock):
            arguments = block.raw_arguments or json.dumps(
                block.arguments, ensure_ascii=False, default=str
            )
            lines.append(
                f"[called tool {block.name} (id {block.id}) with {_cut(arguments, _ARGUMENT_CHARS)}]"
            )
        elif isinstance(block, ToolResultBlock):
            status = "error" if block.is_error else "result"
            lines.append(f"[tool {status} for {block.call_id}]\n{_cut(block.text, _RESULT_CHARS)}")
        elif isinstance(block, ImageBlock):
            lines.append("[image]")
        elif isinstance(block, ThinkingBlock):
            continue
    role = {"user": "USER", "assistant": "ASSISTANT", "tool": "TOOL", "system": "SYSTEM"}[
        message.role
    ]
    return f"{role}: " + "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"
