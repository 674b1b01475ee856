"""What the guards depend on: the invariant checker reports every kind of violation (so a
test using it can fail), and compaction shortens a tool result that alone overflows the
context window instead of failing the run."""

from __future__ import annotations

import pytest

import tether
from tether.compaction.truncate import TruncateStrategy
from tether.config import Config
from tether.events import Compaction
from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tether.provider import ModelCapabilities
from tether.result import Outcome
from tether.sessions import InMemorySession
from tether.testing import (
    InvariantViolation,
    Reply,
    ScriptedProvider,
    assert_invariant,
    call,
    invariant_violations,
)
from tether.tokens import estimate_request


def asks(*ids: str) -> Message:
    return Message(
        role="assistant",
        content=[ToolCallBlock(id=i, name="t", arguments={}) for i in ids],
    )


def answers(*ids: str) -> Message:
    return Message.tool([ToolResultBlock(call_id=i, content="ok") for i in ids])


def test_a_valid_history_has_no_violations() -> None:
    history = [Message.user("hi"), asks("a", "b"), answers("a", "b"), Message.user("more")]
    assert invariant_violations(history) == []
    assert_invariant(history)
    reused = [asks("call_0"), answers("call_0"), asks("call_0"), answers("call_0")]
    assert invariant_violations(reused) == []  # providers that number calls per response


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([Message.user("hi"), asks("a")], "are not followed by a tool message"),
        ([asks("a"), Message.user("interrupting")], "are not followed by a tool message"),
        ([asks("a", "b"), answers("b", "a")], "do not answer calls ['a', 'b'] in declared order"),
        ([asks("a", "b"), answers("a")], "do not answer calls ['a', 'b']"),
        ([asks("a"), answers("a", "x")], "do not answer calls ['a']"),
        ([answers("a")], "tool message without a preceding assistant tool call"),
        ([Message.user("hi"), answers("a")], "tool message without a preceding assistant"),
        ([asks("a", "a"), answers("a", "a")], "tool call id 'a' is used twice"),
    ],
    ids=[
        "unanswered-at-end",
        "unanswered-before-user",
        "reordered",
        "missing-result",
        "extra-result",
        "orphan-result-first",
        "orphan-result-after-user",
        "duplicate-id",
    ],
)
def test_each_violation_is_reported(history: list[Message], expected: str) -> None:
    problems = invariant_violations(history)
    assert any(expected in p for p in problems), problems
    with pytest.raises(InvariantViolation, match="History invariant broken"):
        assert_invariant(history)


def test_every_problem_is_listed_not_only_the_first() -> None:
    history = [answers("x"), asks("a", "b"), answers("b", "a"), asks("c", "c")]
    problems = invariant_violations(history)
    assert len(problems) == 4
    with pytest.raises(InvariantViolation) as info:
        assert_invariant(history)
    assert all(p in str(info.value) for p in problems)


# -- tool-result clipping during compaction ------------------------------------------------
WINDOW = 4000


@tether.tool(max_output_chars=None)
def dump() -> str:
    """Return a huge log."""
    return "HEAD-OF-LOG " + "log line\n" * 8000 + " TAIL-OF-LOG"


async def test_a_tool_result_too_big_for_the_window_is_clipped_not_fatal() -> None:
    provider = ScriptedProvider(
        [Reply(text="Reading.", tool_calls=[call("dump")]), Reply(text="The log ends well.")],
        capabilities=ModelCapabilities(context_window=WINDOW, images_in_tool_results=True),
    )
    session = InMemorySession()
    agent = tether.Agent(
        provider,
        tools=[dump],
        config=Config(),
        compaction=TruncateStrategy(threshold=0.6, target=0.4),
    )
    events = [e async for e in agent.stream("What does the log say?", session=session)]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.COMPLETED and result.output == "The log ends well."
    assert any(isinstance(e, Compaction) for e in events)
    assert_invariant(session.messages)
    (clipped,) = [r for m in session.messages for r in m.tool_results]
    assert "characters of this tool result were removed to fit the context window" in clipped.text
    assert clipped.text.startswith("HEAD-OF-LOG") and clipped.text.endswith("TAIL-OF-LOG")
    assert len(clipped.text) < 10_000
    second = provider.requests[1]  # what the model was sent after compacting
    assert estimate_request(second.system, second.tools, second.messages) <= WINDOW


async def test_clipping_keeps_block_content_as_blocks() -> None:
    from tether.compaction.boundaries import clip_result_text

    message = Message.tool(
        [
            ToolResultBlock(call_id="a", content=[TextBlock(text="x" * 5000)]),
            ToolResultBlock(call_id="b", content="short"),
        ]
    )
    clipped = clip_result_text(message, 1000)
    first, second = clipped.tool_results
    assert isinstance(first.content, list) and len(first.text) < 1200
    assert second is message.tool_results[1]
    assert clip_result_text(Message.user("x" * 5000), 10).text == "x" * 5000
