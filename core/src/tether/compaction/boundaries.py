"""Clean cut points: where a history may be split without breaking the invariant.

Cutting before index ``i`` keeps ``messages[i:]``. The cut is clean when ``messages[i]``
is not a ``tool`` message: then no tool result is separated from its call (a call is
always directly followed by its results, so it stays on the same side). A cut before a
``user`` message that is not a tool result also falls between turns, which keeps each
kept turn whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Block, Message, TextBlock, ToolResultBlock

__all__ = ["clean_cuts", "clip_result_text", "is_clean_cut", "tail_start", "turn_starts"]


def is_clean_cut(messages: Sequence[Message], index: int) -> bool:
    """Whether keeping ``messages[index:]`` separates no call from its result."""
    if index <= 0 or index >= len(messages):
        return index == 0 or index == len(messages)
    return messages[index].role != "tool"


def clean_cuts(messages: Sequence[Message]) -> list[int]:
    """Every clean cut index from 1 to ``len(messages) - 1``, ascending."""
    return [i for i in range(1, len(messages)) if messages[i].role != "tool"]


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indices of user messages: where a turn (a prompt and everything it caused) starts."""
    return [i for i, m in enumerate(messages) if m.role == "user"]


def clip_result_text(message: Message, max_chars: int) -> Message:
    """``message`` with every tool result text longer than ``max_chars`` cut in the
    middle, keeping its head and tail and saying how much was left out. Returns the same
    object when nothing was too long."""
    if message.role != "tool":
        return message
    changed = False
    blocks: list[Block] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock) and len(block.text) > max_chars:
            text = block.text
            keep = max(max_chars // 2, 1)
            omitted = len(text) - 2 * keep
            clipped = (
                f"{text[:keep]}\n[... {omitted} characters of this tool result were removed to fit "
                f"the context window ...]\n{text[-keep:]}"
            )
            blocks.append(
                block.model_copy(
                    update={
                        "content": [TextBlock(text=clipped)]
                        if not isinstance(block.content, str)
                        else clipped
                    }
                )
            )
            changed = True
        else:
            blocks.append(block)
    return message.model_copy(update={"content": blocks}) if changed else message


def tail_start(messages: Sequence[Message], costs: Sequence[int], budget: int) -> int:
    """The earliest clean cut whose tail ``messages[i:]`` costs at most ``budget``,
    preferring the start of a turn. ``costs[i]`` is the token estimate of
    ``messages[i]``. When not even the last call and its results fit, the last clean cut
    (possibly ``len(messages)``, an empty tail) is returned."""
    suffix = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + costs[i]
    cuts = clean_cuts(messages)
    fitting = [i for i in cuts if suffix[i] <= budget]
    if not fitting:
        return cuts[-1] if cuts else len(messages)
    earliest = fitting[0]
    turns = [i for i in turn_starts(messages) if i >= earliest and i in fitting]
    # A turn start is worth losing at most a quarter of the budget.
    if turns and suffix[turns[0]] >= suffix[earliest] - budget // 4:
        return turns[0]
    return earliest
