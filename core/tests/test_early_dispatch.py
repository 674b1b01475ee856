"""Early dispatch: calls of read-only (or early-marked) tools start while the response is
still streaming, as soon as the provider announces them complete (ToolCallReady).

The providers here wait, with a deadline, for the tools they announced to start before
they go on streaming: if a call that should start early did not, the stream fails; a
call that must not start early is checked to have started only after the stream ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

import tether
from tether import CancelToken, Config, InMemorySession
from tether.config import EarlyDispatchConfig, load_config, parse_config
from tether.errors import ProviderConnectionError
from tether.events import Done, Retry, ToolEnd, ToolStart, TurnEnd
from tether.messages import Message, StopReason, TextBlock, ToolCallBlock, Usage
from tether.provider import BaseProvider, ModelRequest, ModelResponse, ToolCallReady
from tether.result import Outcome
from tether.runner import RetryPolicy
from tether.testing import assert_invariant

WAIT = 5.0  # seconds a provider waits for an announced call to start before failing


async def _no_sleep(_: float) -> None:
    return None


class Staged(BaseProvider):
    """A provider whose each attempt is an async generator function ``(provider) -> events``."""

    name = "staged"

    def __init__(self, *attempts: Callable[[Staged], AsyncIterator[Any]]) -> None:
        super().__init__()
        self.attempts = list(attempts)
        self.ended = False
        """Whether the current attempt's stream has ended (set just before its response)."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.ended = False
        attempt = self.attempts.pop(0)
        async for event in attempt(self):
            if isinstance(event, ModelResponse):
                self.ended = True
            yield event


def respond(*calls: ToolCallBlock, text: str = "") -> ModelResponse:
    content: list[Any] = [TextBlock(text=text)] if text else []
    content.extend(calls)
    message = Message(role="assistant", content=content)
    message.meta.model = "staged/m"
    stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
    return ModelResponse(message, stop, Usage(input_tokens=10, output_tokens=5), "staged/m")


def tc(call_id: str, name: str, **arguments: Any) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, arguments=arguments)


async def final(provider: Staged) -> AsyncIterator[Any]:
    yield respond(text="done")


class Lookups:
    """Read-only tools that record when they start (stream over yet?) and can be held."""

    def __init__(self, provider: Staged) -> None:
        self.provider = provider
        self.started: dict[str, asyncio.Event] = {}
        self.release: dict[str, asyncio.Event] = {}
        self.early: dict[str, bool] = {}
        self.runs: dict[str, int] = {}
        self.finished: list[str] = []
        self.done: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []

    def event(self, table: dict[str, asyncio.Event], key: str) -> asyncio.Event:
        return table.setdefault(key, asyncio.Event())

    async def body(self, key: str, hold: bool) -> str:
        self.early.setdefault(key, not self.provider.ended)  # the first start counts
        self.runs[key] = self.runs.get(key, 0) + 1
        self.event(self.started, key).set()
        try:
            if hold:
                await asyncio.wait_for(self.event(self.release, key).wait(), WAIT)
        except asyncio.CancelledError:
            self.cancelled.append(key)
            raise
        self.finished.append(key)
        self.event(self.done, key).set()
        return f"found {key}"

    async def wait_started(self, key: str) -> None:
        await asyncio.wait_for(self.event(self.started, key).wait(), WAIT)

    def tools(self) -> list[tether.Tool]:
        @tether.tool(read_only=True)
        async def lookup(key: str, hold: bool = False) -> str:
            """Look a key up."""
            return await self.body(key, hold)

        @tether.tool
        async def write_note(key: str) -> str:
            """Write a note (changes things)."""
            return await self.body(key, False)

        @tether.tool(sequential=True)
        async def migrate(key: str) -> str:
            """Runs alone."""
            return await self.body(key, False)

        return [lookup, write_note, migrate]


def make_agent(provider: Staged, lookups: Lookups, **kwargs: Any) -> tether.Agent:
    kwargs.setdefault("config", Config())
    kwargs.setdefault("retry", RetryPolicy(sleep=_no_sleep))
    return tether.Agent(provider, tools=lookups.tools(), **kwargs)


async def settle() -> None:
    """Let tasks that were just started run (a started early call sets its event)."""
    for _ in range(5):
        await asyncio.sleep(0)


# -- order ---------------------------------------------------------------------------------------
async def test_results_and_events_keep_declared_order_when_early_calls_finish_out_of_order() -> (
    None
):
    calls = [tc("a", "lookup", key="a", hold=True), tc("b", "lookup", key="b", hold=True)]
    calls.append(tc("c", "lookup", key="c", hold=True))

    async def attempt(provider: Staged) -> AsyncIterator[Any]:
        for index, call in enumerate(calls):
            yield ToolCallReady(call, index)
            await lookups.wait_started(call.arguments["key"])
        # finish them in reverse order while the response is still streaming
        for key in ("c", "b", "a"):
            lookups.release[key].set()
            await asyncio.wait_for(lookups.event(lookups.done, key).wait(), WAIT)
        yield respond(*calls)

    provider = Staged(attempt, final)
    lookups = Lookups(provider)
    session = InMemorySession()
    events = [e async for e in make_agent(provider, lookups).stream("go", session=session)]

    assert lookups.finished == ["c", "b", "a"]
    assert lookups.early == {"a": True, "b": True, "c": True}
    assert lookups.runs == {"a": 1, "b": 1, "c": 1}
    kinds = [(type(e).__name__, getattr(e, "call_id", None)) for e in events]
    turn_end = kinds.index(("TurnEnd", None))
    tool_events = [k for k in kinds if k[0] in ("ToolStart", "ToolEnd")]
    assert kinds.index(tool_events[0]) > turn_end  # nothing about tools before the TurnEnd
    assert tool_events == [
        ("ToolStart", "a"),
        ("ToolStart", "b"),
        ("ToolStart", "c"),
        ("ToolEnd", "a"),
        ("ToolEnd", "b"),
        ("ToolEnd", "c"),
    ]
    results = session.messages[2].tool_results
    assert [(r.call_id, r.text) for r in results] == [
        ("a", "found a"),
        ("b", "found b"),
        ("c", "found c"),
    ]
    assert_invariant(session.messages)
    assert isinstance(events[-1], Done) and events[-1].result.outcome is Outcome.COMPLETED


async def test_an_early_call_still_running_at_the_end_is_awaited_and_reported_once() -> None:
    call = tc("a", "lookup", key="a", hold=True)

    async def attempt(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(call, 0)
        await lookups.wait_started("a")
        yield respond(call)

    provider = Staged(attempt, final)
    lookups = Lookups(provider)
    session = InMemorySession()
    agent = make_agent(provider, lookups)
    events = []
    async for event in agent.stream("go", session=session):
        events.append(event)
        if isinstance(event, ToolStart):
            lookups.release["a"].set()
    assert [type(e) for e in events if isinstance(e, ToolStart | ToolEnd)] == [ToolStart, ToolEnd]
    assert lookups.runs == {"a": 1} and lookups.early == {"a": True}
    assert session.messages[2].tool_results[0].text == "found a"


# -- which calls start early ---------------------------------------------------------------------
def _announcing(*calls: ToolCallBlock) -> Callable[[Staged], AsyncIterator[Any]]:
    async def attempt(provider: Staged) -> AsyncIterator[Any]:
        for index, call in enumerate(calls):
            yield ToolCallReady(call, index)
            await settle()
        yield respond(*calls)

    return attempt


async def _run(provider: Staged, lookups: Lookups, **kwargs: Any) -> InMemorySession:
    session = InMemorySession()
    result = await make_agent(provider, lookups, **kwargs).run("go", session=session)
    assert result.outcome is Outcome.COMPLETED, result.error
    assert_invariant(session.messages)
    assert set(lookups.runs.values()) <= {1}  # no call ran twice
    return session


async def test_a_tool_that_is_not_read_only_never_starts_early() -> None:
    calls = (tc("w", "write_note", key="w"), tc("r", "lookup", key="r"))
    provider = Staged(_announcing(*calls), final)
    lookups = Lookups(provider)
    await _run(provider, lookups)
    assert lookups.early == {"w": False, "r": True}


async def test_calls_after_a_sequential_call_wait_for_the_response() -> None:
    calls = (tc("r1", "lookup", key="r1"), tc("m", "migrate", key="m"))
    calls += (tc("r2", "lookup", key="r2"),)
    provider = Staged(_announcing(*calls), final)
    lookups = Lookups(provider)
    await _run(provider, lookups)
    assert lookups.early == {"r1": True, "m": False, "r2": False}


async def test_a_call_the_policy_would_ask_about_or_deny_never_starts_early() -> None:
    calls = (tc("r1", "lookup", key="r1"), tc("r2", "lookup", key="r2"))
    provider = Staged(_announcing(*calls), final)
    lookups = Lookups(provider)
    session = await _run(provider, lookups, permissions={"lookup(r2)": "deny"})
    assert lookups.early == {"r1": True}  # r2 never ran
    assert session.messages[2].tool_results[1].is_error
    asked: list[str] = []

    provider = Staged(_announcing(*calls), final)
    lookups = Lookups(provider)
    await _run(
        provider,
        lookups,
        permissions={"lookup(r1)": "ask"},
        approval=lambda request: asked.append(request.call_id) or True,
    )
    assert asked == ["r1"] and lookups.early == {"r1": False, "r2": True}


async def test_early_dispatch_can_be_switched_off() -> None:
    call = tc("r", "lookup", key="r")
    provider = Staged(_announcing(call), final)
    lookups = Lookups(provider)
    await _run(provider, lookups, early_dispatch=False)
    assert lookups.early == {"r": False}
    provider = Staged(_announcing(call), final)
    lookups = Lookups(provider)
    await _run(provider, lookups, config=Config(early_dispatch=EarlyDispatchConfig(enabled=False)))
    assert lookups.early == {"r": False}
    provider = Staged(_announcing(call), final)
    lookups = Lookups(provider)
    await _run(provider, lookups, parallel_tools=False)
    assert lookups.early == {"r": False}


async def test_the_configuration_decides_per_tool_over_the_tools_own_flag(tmp_path: Path) -> None:
    (tmp_path / "tether.toml").write_text(
        "[early_dispatch]\ntools = { write_note = true, lookup = false }\n", encoding="utf-8"
    )
    config = load_config(tmp_path / "tether.toml")
    calls = (tc("w", "write_note", key="w"), tc("r", "lookup", key="r"))
    provider = Staged(_announcing(*calls), final)
    lookups = Lookups(provider)
    await _run(provider, lookups, config=config)
    assert lookups.early == {"w": True, "r": False}


def test_a_misspelt_early_dispatch_key_is_a_configuration_error() -> None:
    from tether.errors import ConfigError

    with pytest.raises((ConfigError, ValueError), match="enabld"):
        parse_config({"early_dispatch": {"enabld": False}})


async def test_a_tool_marked_in_code_starts_early_and_sequential_tools_never_do() -> None:
    def noop() -> None:
        """Nothing."""

    assert tether.tool(early=True)(noop).starts_early
    assert not tether.tool(read_only=True, early=False)(noop).starts_early
    assert not tether.tool(read_only=True, sequential=True)(noop).starts_early
    assert tether.tool(read_only=True)(noop).starts_early
    assert not tether.tool(noop).starts_early


# -- retries -------------------------------------------------------------------------------------
async def test_a_retried_response_with_the_same_call_reuses_the_early_call() -> None:
    first = tc("t1_a", "lookup", key="a", hold=True)
    again = tc("t2_a", "lookup", key="a", hold=True)  # the retry names it anew

    async def failing(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(first, 0)
        await lookups.wait_started("a")
        raise ProviderConnectionError("dropped", provider="staged")

    async def retried(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(again, 0)
        await settle()
        lookups.release["a"].set()
        yield respond(again)

    provider = Staged(failing, retried, final)
    lookups = Lookups(provider)
    session = InMemorySession()
    events = [e async for e in make_agent(provider, lookups).stream("go", session=session)]
    assert lookups.runs == {"a": 1}  # ran once, though announced by two attempts
    assert [type(e) for e in events].count(Retry) == 1
    results = session.messages[2].tool_results
    assert [(r.call_id, r.text) for r in results] == [("t2_a", "found a")]
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert [e.call_id for e in ends] == ["t2_a"]
    assert_invariant(session.messages)


async def test_a_retried_response_without_the_call_discards_it() -> None:
    first = tc("t1_a", "lookup", key="a", hold=True)
    other = tc("t2_b", "lookup", key="b")

    async def failing(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(first, 0)
        await lookups.wait_started("a")
        raise ProviderConnectionError("dropped", provider="staged")

    provider = Staged(failing, _announcing(other), final)
    lookups = Lookups(provider)
    session = await _run(provider, lookups)
    assert lookups.cancelled == ["a"] and "a" not in lookups.finished
    results = session.messages[2].tool_results
    assert [(r.call_id, r.text) for r in results] == [("t2_b", "found b")]


async def test_a_response_cut_off_at_max_tokens_cancels_its_early_calls() -> None:
    call = tc("a", "lookup", key="a", hold=True)

    async def cut(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(call, 0)
        await lookups.wait_started("a")
        response = respond(call)
        response.stop_reason = StopReason.MAX_TOKENS
        yield response

    provider = Staged(cut)
    lookups = Lookups(provider)
    session = InMemorySession()
    result = await make_agent(provider, lookups).run("go", session=session)
    assert result.outcome is Outcome.MAX_TOKENS
    assert lookups.cancelled == ["a"]
    assert "Not run" in session.messages[2].tool_results[0].text
    assert_invariant(session.messages)


# -- cancellation --------------------------------------------------------------------------------
async def test_cancelling_mid_stream_cancels_the_early_call_and_leaves_a_valid_session() -> None:
    token = CancelToken()
    call = tc("a", "lookup", key="a", hold=True)

    async def stalls(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(call, 0)
        await lookups.wait_started("a")
        token.cancel("user pressed stop")
        await asyncio.wait_for(asyncio.Event().wait(), WAIT)  # the stream stalls
        yield respond(call)

    provider = Staged(stalls)
    lookups = Lookups(provider)
    session = InMemorySession()
    agent = make_agent(provider, lookups)
    events = [e async for e in agent.stream("go", session=session, cancel=token)]
    assert isinstance(events[-1], Done)
    assert events[-1].result.outcome is Outcome.CANCELLED
    assert lookups.cancelled == ["a"] and lookups.finished == []
    assert not [e for e in events if isinstance(e, ToolStart | ToolEnd | TurnEnd)]
    assert [m.role for m in session.messages] == ["user"]
    assert_invariant(session.messages)


async def test_the_task_cancelled_mid_stream_cancels_the_early_call() -> None:
    call = tc("a", "lookup", key="a", hold=True)
    stalled = asyncio.Event()

    async def stalls(provider: Staged) -> AsyncIterator[Any]:
        yield ToolCallReady(call, 0)
        await lookups.wait_started("a")
        stalled.set()
        await asyncio.wait_for(asyncio.Event().wait(), WAIT)
        yield respond(call)

    provider = Staged(stalls)
    lookups = Lookups(provider)
    session = InMemorySession()
    task = asyncio.ensure_future(make_agent(provider, lookups).run("go", session=session))
    await asyncio.wait_for(stalled.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert lookups.cancelled == ["a"]
    assert_invariant(session.messages)
