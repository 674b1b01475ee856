"""Restoring the history invariant after a crash, a bug or a hand edit.

:func:`repair_messages` takes any list of messages and returns a list that keeps the
invariant of :mod:`tether.messages` (every tool call immediately followed by its result,
in declared order), plus a :class:`RepairReport` of what it changed:

- a message stored twice (same id, same content) is kept once; two different messages
  sharing an id keep their content and the later one gets a fresh id;
- a tool-call id declared twice is renamed where it is declared again, together with the
  results that follow that declaration;
- results are moved to the ``tool`` message directly after their call, in call order;
- a call without a result gets an ``is_error`` result saying the call was interrupted;
- results without a call, and second results for one call, are dropped;
- ``tool`` messages left empty are dropped.

Repair never reorders the user, assistant and system messages it keeps, never changes
their content except for renamed ids, and is idempotent: repairing a repaired history
changes nothing and reports nothing. It does not touch files; a session writes a repaired
history back only through its atomic rewrite.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ..messages import Message, ToolCallBlock, ToolResultBlock, new_id
from ..tool_execution import interrupted_result

__all__ = ["INTERRUPTED_ON_LOAD", "RepairAction", "RepairKind", "RepairReport", "repair_messages"]

INTERRUPTED_ON_LOAD = (
    "Interrupted: the session ended before this tool call returned a result "
    "(the process stopped or crashed). It may or may not have taken effect."
)

RepairKind: TypeAlias = Literal[
    "bom",
    "unparseable_line",
    "invalid_utf8",
    "missing_header",
    "duplicate_message",
    "renamed_message_id",
    "renamed_call_id",
    "interrupted_call",
    "moved_result",
    "orphan_result",
    "duplicate_result",
    "empty_tool_message",
]


@dataclass(frozen=True, slots=True)
class RepairAction:
    """One change made while loading or repairing. ``line`` is the 1-based line of the
    session file it concerns, when it comes from loading a file."""

    kind: RepairKind
    detail: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.kind.replace('_', ' ')}: {self.detail}"


@dataclass(slots=True)
class RepairReport:
    """What loading and repairing changed; falsy when nothing did."""

    actions: list[RepairAction] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.actions)

    def __bool__(self) -> bool:
        return bool(self.actions)

    def add(self, kind: RepairKind, detail: str, line: int | None = None) -> None:
        self.actions.append(RepairAction(kind, detail, line))

    def extend(self, other: RepairReport) -> None:
        self.actions.extend(other.actions)

    def counts(self) -> dict[str, int]:
        """Number of actions of each kind, e.g. ``{"interrupted_call": 2}``."""
        counts: dict[str, int] = {}
        for action in self.actions:
            counts[action.kind] = counts.get(action.kind, 0) + 1
        return counts

    def summary(self) -> str:
        """One line for a log or a status bar: ``"2 interrupted calls, 1 unparseable line"``."""
        if not self.actions:
            return "nothing to repair"
        parts = []
        for kind, count in self.counts().items():
            label = kind.replace("_", " ")
            parts.append(f"{count} {label}{'s' if count != 1 and not label.endswith('s') else ''}")
        return ", ".join(parts)


def repair_messages(messages: Sequence[Message]) -> tuple[list[Message], RepairReport]:
    """Return ``messages`` with the invariant restored, and what was changed.

    The input is not modified; messages that need no change are returned as the same
    objects, so an intact history costs one pass and no copies.
    """
    report = RepairReport()
    if _is_intact(messages):
        return list(messages), report
    unique = _dedupe_messages(messages, report)
    renamed = _rename_duplicate_call_ids(unique, report)
    return _pair_results(renamed, report), report


def _is_intact(messages: Sequence[Message]) -> bool:
    """Whether repair would change nothing: one pass, no copies, for the common case.

    True exactly when message ids are unique, tool-call ids are unique, every assistant
    message with calls is directly followed by a ``tool`` message made only of their
    results in call order, and every ``tool`` message is such an answer. Anything else
    goes through the full repair, which then reports what it changed.
    """
    ids: set[str] = set()
    call_ids: set[str] = set()
    expected: list[str] | None = None  # call ids the next message must answer
    for message in messages:
        mid = message.meta.id
        if mid in ids:
            return False
        ids.add(mid)
        role = message.role
        if expected is not None:
            if role != "tool" or len(message.content) != len(expected):
                return False
            for block, call_id in zip(message.content, expected, strict=True):
                if not isinstance(block, ToolResultBlock) or block.call_id != call_id:
                    return False
            expected = None
            continue
        if role == "tool":
            return False
        if role != "assistant":
            continue
        for block in message.content:
            if isinstance(block, ToolCallBlock):
                if block.id in call_ids:
                    return False
                call_ids.add(block.id)
                if expected is None:
                    expected = [block.id]
                else:
                    expected.append(block.id)
    return expected is None


# -- duplicate messages -------------------------------------------------------------------------
def _dedupe_messages(messages: Sequence[Message], report: RepairReport) -> list[Message]:
    seen: dict[str, Message] = {}
    out: list[Message] = []
    for message in messages:
        mid = message.meta.id
        first = seen.get(mid)
        if first is None:
            seen[mid] = message
            out.append(message)
        elif first.role == message.role and first.content == message.content:
            report.add(
                "duplicate_message",
                f"message {mid} ({message.role}) was stored twice; kept the first",
            )
        else:
            fresh = _fresh(set(seen), mid)
            copy = message.model_copy(
                update={"meta": message.meta.model_copy(update={"id": fresh})}
            )
            seen[fresh] = copy
            out.append(copy)
            report.add(
                "renamed_message_id", f"two messages shared id {mid}; the later one is now {fresh}"
            )
    return out


# -- duplicate tool-call ids ------------------------------------------------------------------
def _rename_duplicate_call_ids(messages: list[Message], report: RepairReport) -> list[Message]:
    declared = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    if len(declared) == len(set(declared)):
        return messages
    taken = set(declared)
    seen: set[str] = set()
    current: dict[str, str] = {}  # original id -> id that results seen from here on answer
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            blocks = list(message.content)
            changed = False
            for index, block in enumerate(blocks):
                if not isinstance(block, ToolCallBlock):
                    continue
                if block.id in seen:
                    fresh = _fresh(taken, block.id)
                    taken.add(fresh)
                    blocks[index] = block.model_copy(update={"id": fresh})
                    current[block.id] = fresh
                    changed = True
                    report.add(
                        "renamed_call_id",
                        f"tool call id {block.id} was declared again; renamed to {fresh}",
                    )
                else:
                    seen.add(block.id)
                    current[block.id] = block.id
            out.append(message.model_copy(update={"content": blocks}) if changed else message)
        elif message.role == "tool" and any(
            current.get(r.call_id, r.call_id) != r.call_id for r in message.tool_results
        ):
            blocks = [
                b.model_copy(update={"call_id": current[b.call_id]})
                if isinstance(b, ToolResultBlock) and current.get(b.call_id, b.call_id) != b.call_id
                else b
                for b in message.content
            ]
            out.append(message.model_copy(update={"content": blocks}))
        else:
            out.append(message)
    return out


# -- pairing calls and results --------------------------------------------------------------------
def _pair_results(messages: list[Message], report: RepairReport) -> list[Message]:
    calls: set[str] = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    results: dict[str, ToolResultBlock] = {}
    for message in messages:
        if message.role != "tool":
            continue
        for block in message.content:
            if not isinstance(block, ToolResultBlock):
                continue
            if block.call_id not in calls:
                report.add("orphan_result", f"result for unknown tool call {block.call_id} dropped")
            elif block.call_id in results:
                report.add(
                    "duplicate_result", f"second result for tool call {block.call_id} dropped"
                )
            else:
                results[block.call_id] = block

    out: list[Message] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            # Its results are placed after their calls (or reported as orphans) below.
            if not _answers_previous(messages, index) and not message.tool_results:
                report.add(
                    "empty_tool_message", f"tool message {message.id} had no results; dropped"
                )
            continue
        out.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        out.append(_answer(message, following, results, report))
    return out


def _answers_previous(messages: list[Message], index: int) -> bool:
    """Whether the tool message at ``index`` directly follows an assistant message with calls."""
    previous = messages[index - 1] if index > 0 else None
    return previous is not None and previous.role == "assistant" and bool(previous.tool_calls)


def _answer(
    call_message: Message,
    following: Message | None,
    results: dict[str, ToolResultBlock],
    report: RepairReport,
) -> Message:
    """The tool message that answers ``call_message``: ``following`` itself when it already
    does, otherwise one rebuilt from the results found anywhere in the history."""
    expected = [c.id for c in call_message.tool_calls]
    if following is not None and following.role == "tool":
        got = [b.call_id for b in following.content if isinstance(b, ToolResultBlock)]
        if (
            got == expected
            and len(following.content) == len(got)
            and all(results.get(b.call_id) is b for b in following.tool_results)
        ):
            return following
    answer: list[ToolResultBlock] = []
    local = (
        {b.call_id for b in following.tool_results}
        if following is not None and following.role == "tool"
        else set()
    )
    for call_id in expected:
        found = results.get(call_id)
        if found is None:
            answer.append(interrupted_result(call_id, INTERRUPTED_ON_LOAD))
            report.add(
                "interrupted_call", f"tool call {call_id} had no result; marked as interrupted"
            )
        else:
            if call_id not in local:
                report.add(
                    "moved_result",
                    f"result for tool call {call_id} moved to directly after its call",
                )
            answer.append(found)
    if following is not None and following.role == "tool":
        got = [b.call_id for b in following.tool_results if b.call_id in expected]
        if got != [c for c in expected if c in got]:
            report.add(
                "moved_result", f"results after message {call_message.id} put into call order"
            )
        return following.model_copy(update={"content": answer})
    return Message.tool(answer)


def _fresh(taken: set[str], base: str) -> str:
    for suffix in _suffixes():
        candidate = f"{base}-{suffix}"
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable")  # pragma: no cover


def _suffixes() -> Iterator[str]:
    yield "dup"
    while True:
        yield new_id()[:8]
