"""Observers that name their events: called for those only, in order, with the run known."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tether
from tether.config import Config
from tether.errors import PluginError, SessionBusyError
from tether.events import (
    Done,
    RunAborted,
    RunStart,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
)
from tether.observe import current_run
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, call

EVENT_TYPES = (RunStart, TextDelta, TurnEnd, ToolStart, ToolEnd, Done)


@tether.tool
def shout(text: str) -> str:
    """Upper-case text."""
    return text.upper()


def observing(*callbacks: object) -> types.ModuleType:
    """A plugin module registering ``callbacks`` as observers."""
    module = types.ModuleType("obs")

    def register_observers(observers: Any) -> None:
        for index, callback in enumerate(callbacks):
            observers.add(f"observer{index}", callback)

    module.register_observers = tether.hookimpl(register_observers)  # type: ignore[attr-defined]
    return module


def agent_for(replies: list[Reply], *observers: object) -> tether.Agent:
    return tether.Agent(
        ScriptedProvider(replies),
        tools=[shout],
        config=Config(),
        plugins=[observing(*observers)],
    )


class Named:
    """Records the events it is handed, and the run each came from."""

    def __init__(self, kinds: object) -> None:
        self.observed_events = kinds
        self.seen: list[Any] = []
        self.runs: set[str | None] = set()

    def __call__(self, event: Any) -> None:
        self.seen.append(event)
        run = current_run()
        self.runs.add(run.run_id if run is not None else None)


replies = st.lists(
    st.one_of(
        st.lists(st.text("ab", min_size=1, max_size=3), min_size=1, max_size=4).map(
            lambda chunks: Reply(chunks=chunks)
        ),
        st.integers(1, 3).map(
            lambda n: Reply(tool_calls=[call("shout", text=f"t{i}") for i in range(n)])
        ),
    ),
    max_size=4,
).map(lambda turns: [*turns, Reply(text="done")])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=replies, kinds=st.sets(st.sampled_from(EVENT_TYPES)))
def test_an_observer_naming_its_events_sees_exactly_those_of_the_stream_in_order(
    script: list[Reply], kinds: set[type]
) -> None:
    named = Named(tuple(kinds))
    everything: list[Any] = []
    agent = agent_for(script, named, everything.append)

    async def consume() -> list[Any]:
        return [event async for event in agent.stream("go")]

    streamed = asyncio.run(consume())
    assert isinstance(streamed[-1], Done) and streamed[-1].result.ok
    assert everything == streamed  # an observer without observed_events takes all
    assert named.seen == [event for event in streamed if type(event) in kinds]
    assert named.runs <= {streamed[0].run_id}


async def test_an_observer_of_run_ends_learns_of_an_abandoned_run() -> None:
    ends = Named((Done, RunAborted))
    agent = agent_for([Reply(tool_calls=[call("shout", text="hi")]), Reply(text="HI")], ends)
    stream = agent.stream("x")
    async for event in stream:
        if isinstance(event, ToolStart):
            break
    await stream.aclose()
    assert [type(event) for event in ends.seen] == [RunAborted]
    assert isinstance(ends.seen[0].error, GeneratorExit)


async def test_a_run_refused_because_its_session_is_busy_is_not_observed() -> None:
    seen: list[Any] = []
    agent = agent_for([Reply(text="first"), Reply(text="second")], seen.append)
    session = InMemorySession()
    first = agent.stream("one", session=session)
    assert isinstance(await anext(first), RunStart)
    with pytest.raises(SessionBusyError):
        await agent.run("two", session=session)
    rest = [event async for event in first]
    assert isinstance(rest[-1], Done) and rest[-1].result.ok
    assert [type(event) for event in seen].count(RunStart) == 1
    assert not any(isinstance(event, RunAborted) for event in seen)


@pytest.mark.parametrize("kinds", ["TextDelta", TextDelta, [TextDelta, "Done"]])
async def test_observed_events_that_are_not_event_classes_are_refused_clearly(
    kinds: object,
) -> None:
    agent = agent_for([Reply(text="hi")], Named(kinds))
    with pytest.raises(PluginError, match=r"observed_events=.*expected a collection of event"):
        await agent.run("x")
