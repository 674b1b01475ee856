"""Retries, authentication failures, cancellation and limits."""

from __future__ import annotations

import asyncio
from datetime import UTC

import pytest

import tether
from tether.cancel import CancelToken
from tether.compaction import CompactionContext, CompactionResult
from tether.config import Config, LimitsConfig
from tether.errors import AuthenticationError, ContextOverflowError, ServerError
from tether.events import Compaction, Retry, TextDelta, ToolEnd, ToolStart
from tether.messages import Message, Usage
from tether.provider import ModelCapabilities, Pricing
from tether.result import Outcome
from tether.retry import RetryPolicy
from tether.sessions import InMemorySession
from tether.testing import (
    RecordingSleep,
    Reply,
    ScriptedProvider,
    assert_invariant,
    auth_failed,
    call,
    connection_dropped,
    context_overflow,
    overloaded,
    rate_limited,
    server_error,
)


@tether.tool
async def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def make(
    provider: ScriptedProvider, sleep: RecordingSleep | None = None, **kwargs: object
) -> tether.Agent:
    retry = RetryPolicy(sleep=sleep or RecordingSleep(), base_delay=0.5)
    return tether.Agent(provider, tools=[add], config=Config(), retry=retry, **kwargs)  # type: ignore[arg-type]


async def test_rate_limit_server_error_and_mid_stream_drop_are_retried_to_success() -> None:
    answer = Reply(text="The answer is 42.", chunk=4)
    provider = ScriptedProvider(
        [
            rate_limited(retry_after=7.5),
            server_error(503),
            connection_dropped(after=answer, partial=2),
            overloaded(after=answer, partial=3),
            answer,
        ]
    )
    sleep = RecordingSleep()
    session = InMemorySession()
    events = [e async for e in make(provider, sleep).stream("q", session=session)]

    retries = [e for e in events if isinstance(e, Retry)]
    assert [r.attempt for r in retries] == [1, 2, 3, 4]
    assert retries[0].delay == 7.5 and sleep.delays[0] == 7.5  # retry-after honoured
    assert all(0 <= d <= 30 for d in sleep.delays[1:])
    assert sleep.delays == [r.delay for r in retries]
    assert [type(r.error).__name__ for r in retries] == [
        "RateLimitError",
        "ServerError",
        "ProviderConnectionError",
        "OverloadedError",
    ]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.ok and result.retries == 4 and result.output == "The answer is 42."
    # partial deltas of failed attempts were streamed, but the history holds the answer once
    assert [m.text for m in session.messages] == ["q", "The answer is 42."]
    deltas_after_last_retry = [
        e.text for e in events[events.index(retries[-1]) :] if isinstance(e, TextDelta)
    ]
    assert "".join(deltas_after_last_retry) == "The answer is 42."


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=30.0, max_attempts=20)
    error = ServerError("x")
    for attempt in range(1, 12):
        delays = [policy.delay(attempt, error) for _ in range(200)]
        assert all(d is not None and 0 <= d <= min(30.0, 2 ** (attempt - 1)) for d in delays)
    assert (
        max(policy.delay(10, error) or 0 for _ in range(500)) > 15
    )  # jitter spreads up to the cap
    assert policy.delay(20, error) is None


async def test_retries_give_up_after_max_attempts_with_the_last_error() -> None:
    provider = ScriptedProvider([server_error(500)] * 3)
    agent = make(provider, retry_attempts := RecordingSleep())
    agent.retry.max_attempts = 3
    with pytest.raises(ServerError):
        await agent.run("q")
    assert len(retry_attempts.delays) == 2


async def test_authentication_failure_fails_at_once_naming_the_key() -> None:
    provider = ScriptedProvider([auth_failed("ACME_API_KEY"), Reply(text="never")])
    sleep = RecordingSleep()
    session = InMemorySession()
    events: list[object] = []
    with pytest.raises(AuthenticationError, match="ACME_API_KEY"):
        async for event in make(provider, sleep).stream("q", session=session):
            events.append(event)
    assert sleep.delays == [] and not any(isinstance(e, Retry) for e in events)
    assert len(provider.requests) == 1 and provider.remaining == 1
    assert [m.role for m in session.messages] == ["user"]


async def test_context_overflow_compacts_and_retries_once() -> None:
    class DropOldest:
        name = "drop-oldest"

        def __init__(self) -> None:
            self.forced: list[bool] = []

        async def compact(self, context: CompactionContext) -> CompactionResult | None:
            self.forced.append(context.force)
            if not context.force:
                return None
            return CompactionResult(
                messages=[Message.user("[summary]"), *context.messages[-1:]],
                tokens_before=100,
                tokens_after=10,
            )

    strategy = DropOldest()
    session = InMemorySession(
        [
            Message.user("old"),
            Message(role="assistant", content=[tether.TextBlock(text="old answer")]),
        ]
    )
    provider = ScriptedProvider([context_overflow(), Reply(text="fits now")])
    events = [e async for e in make(provider, compaction=strategy).stream("new", session=session)]
    compactions = [e for e in events if isinstance(e, Compaction)]
    assert len(compactions) == 1 and compactions[0].strategy == "drop-oldest"
    assert (compactions[0].messages_before, compactions[0].messages_after) == (3, 2)
    assert [m.text for m in provider.requests[1].messages] == ["[summary]", "new"]
    assert events[-1].result.ok  # type: ignore[union-attr]

    # a second overflow after compaction is final
    provider = ScriptedProvider([context_overflow(), context_overflow(), Reply(text="never")])
    with pytest.raises(ContextOverflowError):
        await make(provider, compaction=DropOldest()).run(
            "new", session=InMemorySession([Message.user("x")])
        )
    # and a strategy that cannot compact makes the overflow final at once
    provider = ScriptedProvider([context_overflow(), Reply(text="never")])
    with pytest.raises(ContextOverflowError):
        await make(provider, compaction="none").run("new")


# -- cancellation ------------------------------------------------------------------------------
async def test_cancel_token_during_a_tool_interrupts_it_and_keeps_the_invariant() -> None:
    token = CancelToken()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    @tether.tool
    async def long_job() -> str:
        """Long."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    provider = ScriptedProvider(
        [Reply(tool_calls=[call("long_job"), call("add", a=1, b=1)]), Reply(text="never")]
    )
    session = InMemorySession()
    agent = tether.Agent(provider, tools=[long_job, add], config=Config())

    async def cancel_when_started() -> None:
        await started.wait()
        token.cancel("user pressed stop")

    canceller = asyncio.create_task(cancel_when_started())
    events = [e async for e in agent.stream("go", session=session, cancel=token)]
    await canceller
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.CANCELLED and cancelled.is_set()
    ends = {e.call_id: e for e in events if isinstance(e, ToolEnd)}
    assert len(ends) == 2 and ends["call_1"].interrupted and not ends["call_2"].interrupted
    results = session.messages[-1].tool_results
    assert (
        results[0].is_error
        and "Interrupted" in results[0].text
        and "user pressed stop" in results[0].text
    )
    assert results[1].text == "2"  # finished before the cancel and kept
    assert_invariant(session.messages)
    assert provider.remaining == 1  # no model call after cancellation


async def test_cancel_token_during_streaming_stops_the_response() -> None:
    token = CancelToken()
    provider = ScriptedProvider([Reply(text="x" * 100, chunk=1)])
    session = InMemorySession()
    seen = 0
    async for event in make(provider).stream("go", session=session, cancel=token):
        if isinstance(event, TextDelta):
            seen += 1
            if seen == 5:
                token.cancel()
        last = event
    assert last.result.outcome is Outcome.CANCELLED  # type: ignore[union-attr]
    assert seen < 100
    assert [m.role for m in session.messages] == ["user"]


async def test_cancel_token_stops_a_stream_blocked_waiting_for_bytes() -> None:
    token = CancelToken()

    class Stalled(ScriptedProvider):
        async def stream(self, request):  # type: ignore[no-untyped-def]
            yield TextDelta("first")
            await asyncio.Event().wait()  # the server stops sending
            yield TextDelta("never")

    async def cancel_soon() -> None:
        await asyncio.sleep(0.01)
        token.cancel()

    asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(cancel_soon()))
    result = await make(Stalled()).run("go", cancel=token)
    assert result.outcome is Outcome.CANCELLED and result.output == ""


async def test_task_cancellation_during_a_tool_keeps_the_invariant_and_propagates() -> None:
    started = asyncio.Event()

    @tether.tool
    async def long_job() -> str:
        """Long."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    provider = ScriptedProvider([Reply(tool_calls=[call("long_job")]), Reply(text="never")])
    session = InMemorySession()
    task = asyncio.create_task(
        tether.Agent(provider, tools=[long_job], config=Config()).run("go", session=session)
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.messages[-1].role == "tool" and session.messages[-1].tool_results[0].is_error
    assert_invariant(session.messages)


async def test_task_cancellation_during_streaming_leaves_no_partial_message() -> None:
    class Stalled(ScriptedProvider):
        async def stream(self, request):  # type: ignore[no-untyped-def]
            yield TextDelta("partial")
            await asyncio.Event().wait()
            yield TextDelta("never")

    session = InMemorySession([Message.user("earlier")])
    seen = asyncio.Event()

    async def consume() -> None:
        async for event in make(Stalled()).stream("go", session=session):
            if isinstance(event, TextDelta):
                seen.set()

    task = asyncio.create_task(consume())
    await seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m.text for m in session.messages] == ["earlier", "go"]


# -- limits --------------------------------------------------------------------------------------
async def test_max_turns_ends_with_a_limit_outcome_and_answered_calls() -> None:
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=i, b=1)]) for i in range(10)])
    session = InMemorySession()
    result = await make(provider, limits=LimitsConfig(max_turns=3)).run("loop", session=session)
    assert result.outcome is Outcome.LIMIT and result.turns == 3
    assert isinstance(result.error, tether.errors.MaxTurnsExceeded) and "limits.max_turns" in str(
        result.error
    )
    assert_invariant(session.messages)
    with pytest.raises(tether.errors.MaxTurnsExceeded):
        result.raise_for_outcome()


async def test_token_and_cost_budgets_end_the_run() -> None:
    big = Usage(input_tokens=600, output_tokens=100)
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=1)], usage=big)] * 5)
    session = InMemorySession()
    result = await make(provider, limits={"max_total_tokens": 1000}).run("x", session=session)
    assert result.outcome is Outcome.LIMIT and isinstance(
        result.error, tether.errors.TokenBudgetExceeded
    )
    assert result.turns == 2 and result.usage.total_tokens == 1400
    assert "Not run" in session.messages[-1].tool_results[0].text
    assert_invariant(session.messages)

    priced = ScriptedProvider(
        [Reply(tool_calls=[call("add", a=1, b=1)], usage=Usage(input_tokens=1_000_000))] * 5,
        capabilities=ModelCapabilities(pricing=Pricing(input=1.0, output=1.0)),
    )
    result = await make(priced, limits={"max_cost_usd": 2.5}).run("x")
    assert isinstance(
        result.error, tether.errors.CostBudgetExceeded
    ) and result.cost == pytest.approx(3.0)


async def test_wall_time_limit_interrupts_a_slow_tool() -> None:
    @tether.tool
    async def forever() -> str:
        """Never ends."""
        await asyncio.Event().wait()
        return "never"

    provider = ScriptedProvider([Reply(tool_calls=[call("forever")]), Reply(text="never")])
    session = InMemorySession()
    agent = tether.Agent(provider, tools=[forever], config=Config(), limits={"wall_time_s": 0.05})
    result = await agent.run("x", session=session)
    assert isinstance(result.error, tether.errors.WallTimeExceeded)
    assert "wall-time limit" in session.messages[-1].tool_results[0].text
    assert_invariant(session.messages)


async def test_repeated_identical_failing_calls_are_detected_as_a_loop() -> None:
    replies = [Reply(tool_calls=[call("add", a="x", b=1)]) for _ in range(10)]
    session = InMemorySession()
    result = await make(ScriptedProvider(replies), limits={"loop_threshold": 3}).run(
        "x", session=session
    )
    assert isinstance(result.error, tether.errors.LoopDetected) and result.turns == 3
    assert "same arguments 3 times" in str(result.error)
    assert_invariant(session.messages)


async def test_varying_failures_are_not_a_loop() -> None:
    replies = [Reply(tool_calls=[call("add", a=f"x{i}", b=1)]) for i in range(4)] + [
        Reply(text="gave up")
    ]
    result = await make(ScriptedProvider(replies), limits={"loop_threshold": 2}).run("x")
    assert result.ok and result.tool_errors == 4


async def test_a_hallucinated_tool_is_answered_and_listed_tools_are_offered() -> None:
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("delete_everything")]), Reply(text="sorry")]
    )
    session = InMemorySession()
    events = [e async for e in make(provider).stream("x", session=session)]
    assert any(isinstance(e, ToolStart) and e.name == "delete_everything" for e in events)
    text = session.messages[2].tool_results[0].text
    assert "no tool named `delete_everything`" in text and "Available tools: add" in text
    assert_invariant(session.messages)


def test_retry_after_headers_are_parsed_for_provider_plugins() -> None:
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from tether.retry import parse_retry_after

    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": soon}) or 0) <= 30
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
