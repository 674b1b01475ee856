"""Restoring the history invariant after a crash, a bug or a hand edit.

:func:`repair_messages` takes any list of messages and returns a list that keeps the
invariant of :mod:`tether.messages` (every tool call immediately followed by its result,
in declared order), plus a :class:`RepairReport` of what it changed:

- a message stored twice (same id, same content) is kept once; two different messages
  sharing an id keep their content and the later one gets a fresh id;
- within one assistant message, a tool call repeated byte for byte (same id, name and
  arguments) is kept once; a different call reusing an id there gets a fresh id, together
  with its result. An id reused by a *later* assistant message is valid (some providers
  number calls per response) and left alone: a result answers the latest call declared
  with its id before it;
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

from ..messages import Message, ToolCallBlock, ToolResultBlock, interrupted_result, new_id

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
    "duplicate_call",
    "kept_original",
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
        """One line for a log or a status bar: ``"2 interrupted calls, 1 unparseable line"``,
        followed by where the damaged original was kept, if it was."""
        if not self.actions:
            return "nothing to repair"
        parts = []
        for kind, count in self.counts().items():
            if kind == "kept_original":
                continue
            label = kind.replace("_", " ")
            parts.append(f"{count} {label}{'s' if count != 1 and not label.endswith('s') else ''}")
        kept = [a.detail for a in self.actions if a.kind == "kept_original"]
        return "; ".join([", ".join(parts), *kept])


def repair_messages(messages: Sequence[Message]) -> tuple[list[Message], RepairReport]:
    """Return ``messages`` with the invariant restored, and what was changed.

    The input is not modified; messages that need no change are returned as the same
    objects, so an intact history costs one pass and no copies.
    """
    report = RepairReport()
    if _is_intact(messages):
        return list(messages), report
    unique = _dedupe_messages(messages, report)
    calls = _fix_repeated_calls(unique, report)
    return _pair_results(calls, report), report


def _is_intact(messages: Sequence[Message]) -> bool:
    """Whether repair would change nothing: one pass, no copies, for the common case.

    True exactly when message ids are unique, the tool-call ids of each assistant message
    are unique, every assistant message with calls is directly followed by a ``tool``
    message made only of their results in call order, and every ``tool`` message is such
    an answer. Anything else goes through the full repair, which then reports what it changed.
    """
    ids: set[str] = set()
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
                if expected is None:
                    expected = [block.id]
                elif block.id in expected:
                    return False
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


# -- tool-call ids repeated inside one message ------------------------------------------------
def _fix_repeated_calls(messages: list[Message], report: RepairReport) -> list[Message]:
    """Collapse byte-identical repeats of a call inside one assistant message, and give a
    fresh id to a different call reusing an id there (and to the result that answers it:
    the n-th result for an id in the next ``tool`` message answers the n-th call)."""
    out: list[Message] = []
    pending: dict[str, list[str | None]] = {}  # id -> new id of each call, None if collapsed
    for message in messages:
        if message.role == "tool" and pending:
            out.append(_renumber_results(message, pending))
            pending = {}
            continue
        pending = {}
        if message.role != "assistant" or not message.tool_calls:
            out.append(message)
            continue
        calls = message.tool_calls
        if len({c.id for c in calls}) == len(calls):
            out.append(message)
            continue
        taken = {c.id for c in calls}
        first: dict[str, ToolCallBlock] = {}
        blocks: list[object] = []
        for block in message.content:
            if not isinstance(block, ToolCallBlock):
                blocks.append(block)
                continue
            original = first.get(block.id)
            if original is None:
                first[block.id] = block
                pending.setdefault(block.id, []).append(block.id)
                blocks.append(block)
            elif original.name == block.name and original.arguments == block.arguments:
                pending[block.id].append(None)
                report.add(
                    "duplicate_call",
                    f"tool call {block.id} ({block.name}) was repeated in one message; kept once",
                )
            else:
                fresh = _fresh(taken, block.id)
                taken.add(fresh)
                pending[block.id].append(fresh)
                blocks.append(block.model_copy(update={"id": fresh}))
                report.add(
                    "renamed_call_id",
                    f"tool call id {block.id} was used twice in one message; the second is now {fresh}",
                )
        out.append(message.model_copy(update={"content": blocks}))
    return out


def _renumber_results(message: Message, pending: dict[str, list[str | None]]) -> Message:
    seen: dict[str, int] = {}
    blocks: list[object] = []
    changed = False
    for block in message.content:
        if isinstance(block, ToolResultBlock) and block.call_id in pending:
            nth = seen.get(block.call_id, 0)
            seen[block.call_id] = nth + 1
            ids = pending[block.call_id]
            target = ids[nth] if nth < len(ids) else block.call_id
            if target is not None and target != block.call_id:
                block = block.model_copy(update={"call_id": target})
                changed = True
        blocks.append(block)
    return message.model_copy(update={"content": blocks}) if changed else message


# -- pairing calls and results --------------------------------------------------------------------
_Key = tuple[int, str]  # (index of the declaring assistant message, call id)


def _pair_results(messages: list[Message], report: RepairReport) -> list[Message]:
    results: dict[_Key, ToolResultBlock] = {}
    scope: dict[str, int] = {}  # call id -> index of its latest declaration so far
    for index, message in enumerate(messages):
        if message.role == "assistant":
            for call in message.tool_calls:
                scope[call.id] = index
            continue
        if message.role != "tool":
            continue
        for block in message.content:
            if not isinstance(block, ToolResultBlock):
                continue
            declared = scope.get(block.call_id)
            if declared is None:
                report.add("orphan_result", f"result for unknown tool call {block.call_id} dropped")
            elif (declared, block.call_id) in results:
                report.add(
                    "duplicate_result", f"second result for tool call {block.call_id} dropped"
                )
            else:
                results[(declared, block.call_id)] = block

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
        out.append(_answer(index, message, following, results, report))
    return out


def _answers_previous(messages: list[Message], index: int) -> bool:
    """Whether the tool message at ``index`` directly follows an assistant message with calls."""
    previous = messages[index - 1] if index > 0 else None
    return previous is not None and previous.role == "assistant" and bool(previous.tool_calls)


def _answer(
    index: int,
    call_message: Message,
    following: Message | None,
    results: dict[_Key, ToolResultBlock],
    report: RepairReport,
) -> Message:
    """The tool message that answers ``call_message`` (at ``index``): ``following`` itself
    when it already does, otherwise one rebuilt from the results found in the history."""
    expected = [c.id for c in call_message.tool_calls]
    if following is not None and following.role == "tool":
        got = [b.call_id for b in following.content if isinstance(b, ToolResultBlock)]
        if (
            got == expected
            and len(following.content) == len(got)
            and all(results.get((index, b.call_id)) is b for b in following.tool_results)
        ):
            return following
    answer: list[ToolResultBlock] = []
    local = (
        {id(b) for b in following.tool_results}
        if following is not None and following.role == "tool"
        else set()
    )
    for call_id in expected:
        found = results.get((index, call_id))
        if found is None:
            answer.append(interrupted_result(call_id, INTERRUPTED_ON_LOAD))
            report.add(
                "interrupted_call", f"tool call {call_id} had no result; marked as interrupted"
            )
        else:
            if id(found) not in local:
                report.add(
                    "moved_result",
                    f"result for tool call {call_id} moved to directly after its call",
                )
            answer.append(found)
    if following is not None and following.role == "tool":
        got = [b.call_id for b in following.tool_results if id(b) in {id(a) for a in answer}]
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
