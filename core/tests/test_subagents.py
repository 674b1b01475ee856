"""Sub-agents: agents as tools, on the same loop — parallel calls, nested events in
order, budgets drawn from the parent, depth limits, and cancellation reaching children."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

import tether
from tether.cancel import CancelToken
from tether.config import Config
from tether.events import Done, Nested, ToolEnd, ToolStart
from tether.provider import ModelCapabilities, ModelRequest
from tether.result import Outcome
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call


def task_of(request: ModelRequest) -> str:
    return request.messages[0].text


def child(handler, tools=(), **kwargs: object) -> tether.Agent:  # type: ignore[no-untyped-def]
    return tether.Agent(
        ScriptedProvider(handler=handler),
        tools=list(tools),
        config=Config(),
        system="child",
        **kwargs,
    )  # type: ignore[arg-type]


async def test_parallel_sub_agents_with_nested_events_in_order() -> None:
    running = 0
    both = asyncio.Event()

    @tether.tool
    async def search(query: str) -> str:
        """Search."""
        nonlocal running
        running += 1
        if running == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)  # only returns if the two children overlap
        return f"results for {query}"

    def research(request: ModelRequest) -> Reply:
        if len(request.messages) == 1:
            return Reply(tool_calls=[call("search", query=task_of(request))])
        return Reply(text=f"summary of {task_of(request)}")

    researcher = child(research, [search])
    parent = tether.Agent(
        ScriptedProvider(
            [
                Reply(
                    tool_calls=[
                        call("research", task="tides", id="p1"),
                        call("research", task="winds", id="p2"),
                    ]
                ),
                Reply(text="Both researched."),
            ]
        ),
        tools=[researcher.as_tool("research", "Research a topic.")],
        config=Config(),
    )
    session = InMemorySession()
    events = [e async for e in parent.stream("plan the sail", session=session)]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.ok and result.output == "Both researched."
    assert [r.text for r in session.messages[2].tool_results] == [
        "summary of tides",
        "summary of winds",
    ]

    # every child event sits between the parent's ToolStart and ToolEnd of its call
    for call_id in ("p1", "p2"):
        start = next(
            i for i, e in enumerate(events) if isinstance(e, ToolStart) and e.call_id == call_id
        )
        end = next(
            i for i, e in enumerate(events) if isinstance(e, ToolEnd) and e.call_id == call_id
        )
        nested = [
            (i, e) for i, e in enumerate(events) if isinstance(e, Nested) and e.call_id == call_id
        ]
        assert nested and all(start < i < end for i, _ in nested)
        kinds = [type(e.event).__name__ for _, e in nested]
        assert kinds == [
            "RunStart",
            "TurnEnd",
            "ToolStart",
            "ToolEnd",
            "TextDelta",
            "TextDelta",
            "TurnEnd",
            "Done",
        ]
        assert {e.agent for _, e in nested} == {"research"} and {e.depth for _, e in nested} == {1}
    # the children's model calls and tokens are charged to the parent
    assert result.turns == 2 + 2 * 2
    assert_invariant(session.messages)


async def test_child_limits_are_capped_by_what_the_parent_has_left() -> None:
    @tether.tool
    def poke() -> str:
        """Poke."""
        return "poked"

    looping = child(
        lambda request: Reply(tool_calls=[call("poke")]), [poke], limits={"max_turns": 50}
    )
    parent = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("helper", task="go")]), Reply(text="never")]),
        tools=[looping.as_tool("helper", "Helps.")],
        config=Config(),
        limits={"max_turns": 4},
    )
    events = [e async for e in parent.stream("start")]
    result = events[-1].result  # type: ignore[union-attr]
    child_done = [e.event for e in events if isinstance(e, Nested) and isinstance(e.event, Done)]
    assert child_done[0].result.outcome is Outcome.LIMIT and child_done[0].result.turns == 3
    helper_end = next(e for e in events if isinstance(e, ToolEnd))
    assert helper_end.is_error and "did not finish (limit)" in helper_end.result.text
    # 1 parent call + 3 child calls use up the parent's 4: it stops instead of calling again
    assert result.outcome is Outcome.LIMIT and result.turns == 4
    assert_invariant(result.messages)


async def test_token_budget_is_shared() -> None:
    child_agent = child(lambda request: Reply(text="done"))
    parent = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("helper", task="go")]), Reply(text="fine")]),
        tools=[child_agent.as_tool("helper", "Helps.")],
        config=Config(),
        limits={"max_total_tokens": 1000},
    )
    result = await parent.run("start")
    assert result.usage.input_tokens == 30 and result.usage.output_tokens == 15  # 3 calls of 10+5


async def test_cancelling_the_parent_cancels_the_children() -> None:
    started = asyncio.Event()
    stopped: list[str] = []

    @tether.tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.append("child tool cancelled")
            raise
        return "never"

    slow = child(lambda request: Reply(tool_calls=[call("wait_forever")]), [wait_forever])
    cancel = CancelToken()
    parent = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("slow", task="x"), call("slow", task="y")])]),
        tools=[slow.as_tool("slow", "Slow.")],
        config=Config(),
    )
    session = InMemorySession()

    async def consume() -> list[object]:
        return [e async for e in parent.stream("go", session=session, cancel=cancel)]

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.01)
    cancel.cancel("user pressed stop")
    events = await asyncio.wait_for(task, 10)
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.outcome is Outcome.CANCELLED
    assert stopped == ["child tool cancelled", "child tool cancelled"]
    assert all(r.is_error and "Interrupted" in r.text for r in session.messages[-1].tool_results)
    assert_invariant(session.messages)


class Forecast(BaseModel):
    city: str
    rain: bool


async def test_a_structured_child_returns_json_to_the_parent() -> None:
    typed = child(
        lambda request: Reply(text='{"city": "Porto", "rain": true}'),
        output_type=Forecast,
    )
    typed_provider = typed._model
    assert isinstance(typed_provider, ScriptedProvider)
    typed_provider.default_capabilities = ModelCapabilities(structured_output=True)
    parent = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("forecast", task="Porto")]), Reply(text="ok")]),
        tools=[typed.as_tool("forecast", "Forecast a city.")],
        config=Config(),
    )
    result = await parent.run("weather?")
    assert result.messages[2].tool_results[0].text == '{"city": "Porto", "rain": true}'


async def test_sub_agents_deeper_than_the_limit_are_refused() -> None:
    leaf = child(lambda request: Reply(text="leaf answer"))
    middle = child(
        lambda request: (
            Reply(tool_calls=[call("leaf", task="deeper")])
            if len(request.messages) == 1
            else Reply(text=f"middle saw: {request.messages[-1].tool_results[0].text}")
        ),
        [leaf.as_tool("leaf", "Leaf.")],
    )
    top = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("middle", task="go")]), Reply(text="top done")]),
        tools=[middle.as_tool("middle", "Middle.")],
        config=Config(),
    )
    events = [e async for e in top.stream("start")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.ok
    answer = result.messages[2].tool_results[0].text
    assert answer.startswith("middle saw: `leaf` cannot run here")
    grandchild = [e for e in events if isinstance(e, Nested) and e.depth == 2]
    assert grandchild == []  # the leaf never started
