"""Property tests over random histories: repair and compaction keep the invariant and
never reorder the messages they keep."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction import CompactionContext, SummarizeStrategy, TruncateStrategy, is_summary
from tether.messages import Message, MessageMeta, TextBlock, ToolCallBlock, ToolResultBlock
from tether.provider import ModelCapabilities
from tether.sessions import repair_messages
from tether.testing import Reply, ScriptedProvider, assert_invariant

CALL_IDS = [f"c{i}" for i in range(8)]
MESSAGE_IDS = [f"m{i}" for i in range(40)]


@st.composite
def damaged_histories(draw: st.DrawFn) -> list[Message]:
    """Arbitrary sequences: duplicate ids, orphan and misplaced results, missing results."""
    messages = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "tool"]))
        meta = MessageMeta(id=draw(st.sampled_from(MESSAGE_IDS)))
        if kind == "user":
            messages.append(
                Message(
                    role="user", content=[TextBlock(text=draw(st.text(max_size=20)))], meta=meta
                )
            )
        elif kind == "assistant":
            messages.append(Message(role="assistant", content=[TextBlock(text="ok")], meta=meta))
        elif kind == "calls":
            ids = draw(st.lists(st.sampled_from(CALL_IDS), min_size=1, max_size=3))
            messages.append(
                Message(
                    role="assistant",
                    content=[ToolCallBlock(id=i, name="f") for i in ids],
                    meta=meta,
                )
            )
        else:
            ids = draw(st.lists(st.sampled_from(CALL_IDS), max_size=3))
            messages.append(
                Message(
                    role="tool",
                    content=[ToolResultBlock(call_id=i, content="r") for i in ids],
                    meta=meta,
                )
            )
    return messages


@st.composite
def valid_histories(draw: st.DrawFn) -> list[Message]:
    """Histories that keep the invariant, with text of random sizes."""
    messages: list[Message] = []
    counter = 0
    for turn in range(draw(st.integers(1, 12))):
        messages.append(Message.user(f"task {turn} " + "w " * draw(st.integers(0, 400))))
        for _ in range(draw(st.integers(0, 3))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                counter += 1
                calls.append(ToolCallBlock(id=f"call{counter}", name="read"))
            messages.append(Message(role="assistant", content=calls))
            messages.append(
                Message.tool(
                    ToolResultBlock(call_id=c.id, content="x " * draw(st.integers(0, 3000)))
                    for c in calls
                )
            )
        if draw(st.booleans()):
            messages.append(Message(role="assistant", content=[TextBlock(text="done")]))
    return messages


def kept_in_order(original: list[Message], result: list[Message]) -> bool:
    """The ids of ``result`` (summaries aside) appear in ``original`` in the same order."""
    positions = {m.id: i for i, m in enumerate(original)}
    seen = [positions[m.id] for m in result if not is_summary(m)]
    return seen == sorted(seen) and len(set(seen)) == len(seen)


@given(damaged_histories())
@settings(max_examples=300, deadline=None)
def test_repair_restores_the_invariant_idempotently_and_keeps_order(history: list[Message]) -> None:
    repaired, _ = repair_messages(history)
    assert_invariant(repaired)
    again, report = repair_messages(repaired)
    assert not report, report.actions
    assert again == repaired

    # user/assistant messages keep their relative order and content (ids aside, and a call
    # repeated byte for byte in one message kept once); none is invented
    def key(m: Message) -> tuple[str, str, list[str]]:
        distinct = {(c.id, c.name, repr(c.arguments)): c.name for c in m.tool_calls}
        return (m.role, m.text, list(distinct.values()))

    original = [key(m) for m in history if m.role != "tool"]
    survivors = [key(m) for m in repaired if m.role != "tool"]
    remaining = iter(original)
    assert all(any(s == o for o in remaining) for s in survivors)


def compact(
    strategy: object, history: list[Message], window: int, force: bool
) -> list[Message] | None:
    provider = ScriptedProvider(
        handler=lambda request: Reply(text="- summary"),
        capabilities=ModelCapabilities(context_window=window),
    )
    context = CompactionContext(
        messages=history, system="sys", tools=(), provider=provider, model="m",
        capabilities=ModelCapabilities(context_window=window), session_id="s", force=force,
    )  # fmt: skip
    result = asyncio.run(strategy.compact(context))  # type: ignore[attr-defined]
    return None if result is None else result.messages


@given(valid_histories(), st.sampled_from([2_000, 5_000, 20_000]), st.booleans())
@settings(max_examples=150, deadline=None)
def test_truncate_keeps_the_invariant_and_the_order(
    history: list[Message], window: int, force: bool
) -> None:
    result = compact(TruncateStrategy(), history, window, force)
    if result is not None:
        assert_invariant(result)
        assert kept_in_order(history, result)


@given(valid_histories(), st.sampled_from([2_000, 5_000, 20_000]), st.booleans())
@settings(max_examples=150, deadline=None)
def test_summarize_keeps_the_invariant_and_the_order(
    history: list[Message], window: int, force: bool
) -> None:
    result = compact(SummarizeStrategy(), history, window, force)
    if result is not None:
        assert_invariant(result)
        assert kept_in_order(history, result)
        assert sum(is_summary(m) for m in result) <= 1
