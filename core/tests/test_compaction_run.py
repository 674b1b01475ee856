"""Compaction in a real agent loop: long runs stay inside the window and cache-friendly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tether
from tether.compaction import (
    SUMMARY_MARKER,
    SummarizeStrategy,
    TruncateStrategy,
    is_summary,
    prefix_stability,
)
from tether.config import Config
from tether.events import Compaction, Done
from tether.messages import Usage
from tether.provider import ModelCapabilities, ModelRequest
from tether.result import Outcome
from tether.sessions import JsonlSession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call, context_overflow
from tether.testing.scripted import Failure
from tether.tokens import estimate_request

WINDOW = 200_000
TURNS = 200


def source_listing(n: int) -> str:
    """A large, realistic tool output: a few KB of code that differs per call."""
    lines = []
    for i in range(40):
        lines.append(f"def handler_{n}_{i}(request, *, retries: int = {i % 4}) -> dict:")
        lines.append(f'    """Handle request {i} of module {n}; see docs/api.md#section-{i}."""')
        lines.append(f"    return {{'status': {200 + i % 3}, 'items': [{i}, {n}, {i * n}]}}")
    return "\n".join(lines)


@tether.tool
def read_module(n: int) -> str:
    """Read module number n."""
    return source_listing(n)


def make_handler(
    capabilities: ModelCapabilities, seen: list[int]
) -> Callable[[ModelRequest], Reply | Failure]:
    """A model that reads modules for TURNS calls, then answers; summary requests get a
    summary. It enforces the window like a real provider and reports real-ish usage."""
    calls = 0

    def handler(request: ModelRequest) -> Reply | Failure:
        nonlocal calls
        size = estimate_request(request.system, request.tools, request.messages)
        seen.append(size)
        if size > capabilities.context_window:
            return context_overflow()
        usage = Usage(input_tokens=size, output_tokens=30)
        if request.system.startswith("You write handover notes"):
            assert "<transcript>" in request.messages[0].text
            return Reply(
                text=f"- Goal: read all modules.\n- Done: read modules up to {calls}.", usage=usage
            )
        calls += 1
        if calls >= TURNS:
            return Reply(text="All modules read.", usage=usage)
        return Reply(
            text=f"Reading module {calls}.", tool_calls=[call("read_module", n=calls)], usage=usage
        )

    return handler


async def test_two_hundred_turns_compact_never_overflow_and_keep_the_prefix_stable(
    tmp_path,
) -> None:
    capabilities = ModelCapabilities(context_window=WINDOW, max_output_tokens=1024)
    seen: list[int] = []
    provider = ScriptedProvider(handler=make_handler(capabilities, seen), capabilities=capabilities)
    agent = tether.Agent(
        provider,
        system="You are a careful code reader.",
        tools=[read_module],
        compaction="summarize",
        limits={"max_turns": TURNS + 10},
        config=Config(),
    )
    compactions: list[Compaction] = []
    with JsonlSession(tmp_path / "long.jsonl") as session:
        async for event in agent.stream("Read every module.", session=session):
            if isinstance(event, Compaction):
                compactions.append(event)
            elif isinstance(event, Done):
                result = event.result
        assert result.outcome is Outcome.COMPLETED, result.error
        assert result.turns == TURNS
        assert_invariant(session.messages)
        assert is_summary(session.messages[0])
        history = list(session.messages)
    # The session on disk holds the compacted history.
    with JsonlSession(tmp_path / "long.jsonl") as reopened:
        assert [m.id for m in reopened.messages] == [m.id for m in history]

    assert len(compactions) >= 3
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    assert max(seen) <= WINDOW  # no request ever exceeded the window
    agent_requests = [
        r for r in provider.requests if not r.system.startswith("You write handover notes")
    ]
    assert len(agent_requests) == TURNS
    stability = prefix_stability(agent_requests)
    assert stability.ratio >= 0.95, stability
    assert len(stability.breaks) == len(compactions)  # only compactions change the prefix


async def test_context_overflow_compacts_and_retries_once() -> None:
    capabilities = ModelCapabilities(context_window=200_000)
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("read_module", n=1)]),
            Reply(tool_calls=[call("read_module", n=2)]),
            context_overflow(),  # the provider counts more than we estimate
            Reply(text="- summary of modules 1 and 2"),  # the summary request
            Reply(text="done"),  # the retried call
        ],
        capabilities=capabilities,
    )
    agent = tether.Agent(
        provider,
        tools=[read_module],
        compaction=SummarizeStrategy(keep_recent=0.0),
        config=Config(),
    )
    events = [e async for e in agent.stream("go")]
    done = events[-1]
    assert isinstance(done, Done) and done.result.outcome is Outcome.COMPLETED
    assert any(isinstance(e, Compaction) for e in events)
    retried = provider.requests[-1]
    assert retried.messages[0].text.startswith(SUMMARY_MARKER)
    assert_invariant(retried.messages)


async def test_summary_request_that_would_overflow_is_done_in_pieces() -> None:
    capabilities = ModelCapabilities(context_window=6_000)
    summary_requests: list[ModelRequest] = []

    def handler(request: ModelRequest) -> Reply | Failure:
        if request.system.startswith("You write handover notes"):
            summary_requests.append(request)
            size = estimate_request(request.system, request.tools, request.messages)
            assert size <= capabilities.context_window
            return Reply(text=f"- piece {len(summary_requests)}")
        return Reply(text="ok")

    provider = ScriptedProvider(handler=handler, capabilities=capabilities)
    from tether.compaction import CompactionContext
    from tether.messages import Message, ToolResultBlock

    history = [Message.user("start")]
    for n in range(12):
        history.append(
            tether.Message(role="assistant", content=[call("read_module", id=f"c{n}", n=n)])
        )
        history.append(
            Message.tool([ToolResultBlock(call_id=f"c{n}", content=source_listing(n)[:1500])])
        )
    context = CompactionContext(
        messages=history, system="", tools=(), provider=provider, model="m",
        capabilities=capabilities, session_id="s", force=True,
    )  # fmt: skip
    result = await SummarizeStrategy().compact(context)
    assert result is not None
    assert len(summary_requests) >= 2  # the older history did not fit one request
    assert (
        "- piece 1" in summary_requests[1].messages[0].text
    )  # each piece builds on the summary so far
    assert_invariant(result.messages)
    assert estimate_request("", (), result.messages) < capabilities.context_window


@pytest.mark.parametrize("failure", ["empty", "error"])
async def test_summary_failure_falls_back_to_truncation(failure: str) -> None:
    capabilities = ModelCapabilities(context_window=8_000)
    from tether.errors import ServerError

    reply: Reply | Failure = (
        Reply(text="") if failure == "empty" else Failure(ServerError("down", provider="scripted"))
    )
    provider = ScriptedProvider(handler=lambda request: reply, capabilities=capabilities)
    from tether.compaction import CompactionContext
    from tether.messages import Message, ToolResultBlock

    history = [Message.user("start")]
    for n in range(10):
        history.append(
            tether.Message(role="assistant", content=[call("read_module", id=f"c{n}", n=n)])
        )
        history.append(
            Message.tool([ToolResultBlock(call_id=f"c{n}", content=source_listing(n)[:2000])])
        )
    context = CompactionContext(
        messages=history, system="", tools=(), provider=provider, model="m",
        capabilities=capabilities, session_id="s",
    )  # fmt: skip
    result = await SummarizeStrategy().compact(context)
    assert result is not None and result.tokens_after < result.tokens_before
    assert_invariant(result.messages)
    assert result.messages[-1] is history[-1]  # the newest round is kept as it was


async def test_truncate_drops_oldest_turns_only() -> None:
    capabilities = ModelCapabilities(context_window=10_000)
    from tether.compaction import CompactionContext
    from tether.messages import Message, ToolResultBlock

    history = []
    for n in range(8):
        history.append(Message.user(f"task {n}"))
        history.append(
            tether.Message(role="assistant", content=[call("read_module", id=f"c{n}", n=n)])
        )
        history.append(
            Message.tool([ToolResultBlock(call_id=f"c{n}", content=source_listing(n)[:2500])])
        )
    context = CompactionContext(
        messages=history, system="", tools=(), provider=ScriptedProvider(), model="m",
        capabilities=capabilities, session_id="s",
    )  # fmt: skip
    result = await TruncateStrategy().compact(context)
    assert result is not None
    assert result.messages[0].role == "user"  # cut at a turn boundary
    assert result.messages == history[len(history) - len(result.messages) :]
    assert result.tokens_after <= 0.4 * capabilities.context_window
