"""Checking the history invariant (see :mod:`tether.messages`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message

__all__ = ["InvariantViolation", "assert_invariant", "invariant_violations"]


class InvariantViolation(AssertionError):
    """The history breaks the tool-call/tool-result invariant."""


def invariant_violations(messages: Sequence[Message]) -> list[str]:
    """Every way ``messages`` breaks the invariant, described; empty if it holds.

    Rules: an assistant message with tool calls is immediately followed by a ``tool``
    message whose results answer exactly those calls, in declared order; a ``tool``
    message appears only right after such an assistant message; the tool-call ids of one
    message are unique (a later message may reuse an id: some providers number calls per
    response).
    """
    problems: list[str] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            calls = message.tool_calls
            seen_ids: set[str] = set()
            for c in calls:
                if c.id in seen_ids:
                    problems.append(f"message {index}: tool call id {c.id!r} is used twice")
                seen_ids.add(c.id)
            if not calls:
                continue
            following = messages[index + 1] if index + 1 < len(messages) else None
            if following is None or following.role != "tool":
                problems.append(
                    f"message {index}: tool calls {[c.id for c in calls]} are not followed by a tool message"
                )
                continue
            expected = [c.id for c in calls]
            got = [r.call_id for r in following.tool_results]
            if got != expected:
                problems.append(
                    f"message {index + 1}: results {got} do not answer calls {expected} in declared order"
                )
        elif message.role == "tool":
            previous = messages[index - 1] if index > 0 else None
            if previous is None or previous.role != "assistant" or not previous.tool_calls:
                problems.append(
                    f"message {index}: tool message without a preceding assistant tool call"
                )
    return problems


def assert_invariant(messages: Sequence[Message]) -> None:
    """Raise :class:`InvariantViolation` listing every problem, if there is any."""
    problems = invariant_violations(messages)
    if problems:
        raise InvariantViolation("History invariant broken:\n  " + "\n  ".join(problems))
