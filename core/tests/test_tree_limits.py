"""Limits over the whole tree of runs: sub-agents, parallel or recursive, draw from what
their parent has left — model calls, tokens, cost and wall time — and when the tree's
budget is spent every run in it ends with a limit outcome, never ``completed``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tether
from tether.config import Config, LimitsConfig
from tether.errors import (
    CostBudgetExceeded,
    MaxTurnsExceeded,
    TokenBudgetExceeded,
    WallTimeExceeded,
)
from tether.events import Done, Nested, RunStart, ToolEnd
from tether.messages import Usage
from tether.provider import ModelCapabilities, ModelRequest, Pricing
from tether.result import Outcome, RunResult
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

PRICING = Pricing(input=2.0, output=10.0)  # dollars per million tokens


class Outcomes:
    """An observer plugin keeping the result of every run of the agents it is given to."""

    def __init__(self) -> None:
        self.results: list[RunResult] = []

    @tether.hookimpl
    def register_observers(self, observers: Any) -> None:
        observers.add("outcomes", self.observe)

    def observe(self, event: object) -> None:
        if isinstance(event, Done):
            self.results.append(event.result)


class Charged:
    """A scripted model that keeps the usage of every response it gives."""

    def __init__(self, reply: Any, *, priced: bool = False) -> None:
        self.usages: list[Usage] = []
        self._reply = reply
        capabilities = ModelCapabilities(pricing=PRICING) if priced else None
        self.provider = ScriptedProvider(handler=self._answer, capabilities=capabilities)

    def _answer(self, request: ModelRequest) -> Reply:
        reply: Reply = self._reply(request)
        assert reply.usage is not None
        self.usages.append(reply.usage)
        return reply


def tokens(usages: list[Usage]) -> int:
    return sum(u.input_tokens + u.output_tokens for u in usages)


def dollars(usages: list[Usage]) -> float:
    return sum(PRICING.cost(u) for u in usages)


@tether.tool
async def note(n: int) -> str:
    """Take a note."""
    return f"noted {n}"


def busy_child(usage: Usage, *, priced: bool = False) -> Charged:
    """A sub-agent that never finishes on its own: every response asks for a tool."""
    return Charged(
        lambda request: Reply(
            tool_calls=[call("note", n=len(request.messages))],
            usage=usage,
            pause=0.001,  # a stream that takes a while: sibling calls would overlap
        ),
        priced=priced,
    )


def six_helpers(usage: Usage, *, priced: bool = False) -> Charged:
    """A parent that hands six tasks to sub-agents at once, then keeps going."""

    def reply(request: ModelRequest) -> Reply:
        if len(request.messages) == 1:
            return Reply(
                tool_calls=[call("helper", task=f"part {i}", id=f"h{i}") for i in range(6)],
                usage=usage,
            )
        return Reply(tool_calls=[call("note", n=len(request.messages))], usage=usage)

    return Charged(reply, priced=priced)


async def run_tree(
    parent: Charged,
    child: Charged,
    limits: dict[str, Any],
    *,
    child_limits: dict[str, Any] | None = None,
    child_tools: tuple[Any, ...] = (note,),
) -> tuple[RunResult, list[RunResult], list[object]]:
    """Run ``parent`` with ``child`` as its ``helper`` sub-agent; the parent's result, the
    sub-agents' results and the parent's events."""
    seen = Outcomes()
    helper = tether.Agent(
        child.provider,
        tools=list(child_tools),
        config=Config(),
        limits=child_limits or {},
        plugins=[seen],
        entry_points=False,
    )
    top = tether.Agent(
        parent.provider,
        tools=[note, helper.as_tool("helper", "Helps with a part of the task.")],
        config=Config(),
        limits=limits,
        entry_points=False,
    )
    events = [e async for e in top.stream("do the whole task")]
    done = events[-1]
    assert isinstance(done, Done)
    return done.result, seen.results, events


# -- six parallel sub-agents ---------------------------------------------------------------------
async def test_six_parallel_sub_agents_share_the_parents_token_budget() -> None:
    usage = Usage(input_tokens=150, output_tokens=50)
    parent, child = six_helpers(usage), busy_child(usage)
    result, children, _ = await run_tree(parent, child, {"max_total_tokens": 2000})

    spent = tokens(parent.usages) + tokens(child.usages)
    assert spent < 2000 + 200  # the bound: one model call's usage past the budget
    assert result.usage.total_tokens == spent  # the parent's result reports the tree's usage
    assert result.outcome is Outcome.LIMIT and isinstance(result.error, TokenBudgetExceeded)
    assert len(children) == 6
    assert all(r.outcome is Outcome.LIMIT for r in children)
    assert all(isinstance(r.error, TokenBudgetExceeded) for r in children)
    assert "set on the run that started this one" in str(children[0].error)
    assert_invariant(result.messages)


async def test_six_parallel_sub_agents_share_the_parents_cost_budget() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100)  # $0.003 a call
    parent, child = six_helpers(usage, priced=True), busy_child(usage, priced=True)
    result, children, _ = await run_tree(parent, child, {"max_cost_usd": 0.01})

    spent = dollars(parent.usages) + dollars(child.usages)
    assert spent < 0.01 + 0.003 + 1e-12
    assert result.cost == pytest.approx(spent)
    assert result.outcome is Outcome.LIMIT and isinstance(result.error, CostBudgetExceeded)
    assert len(children) == 6
    assert all(isinstance(r.error, CostBudgetExceeded) for r in children)


async def test_six_parallel_sub_agents_share_the_parents_model_calls() -> None:
    usage = Usage(input_tokens=10, output_tokens=5)
    parent, child = six_helpers(usage), busy_child(usage)
    result, children, _ = await run_tree(
        parent, child, {"max_turns": 8}, child_limits={"max_turns": 50}
    )

    assert len(parent.usages) + len(child.usages) == 8  # reserved as they start: never more
    assert result.turns == 8
    assert result.outcome is Outcome.LIMIT and isinstance(result.error, MaxTurnsExceeded)
    assert len(children) == 6
    assert all(r.outcome is Outcome.LIMIT for r in children)
    assert all(isinstance(r.error, MaxTurnsExceeded) for r in children)


async def test_six_parallel_sub_agents_stop_at_the_parents_deadline() -> None:
    @tether.tool
    async def wait_for_news() -> str:
        """Wait for news that never comes."""
        await asyncio.Event().wait()
        return "never"

    usage = Usage(input_tokens=10, output_tokens=5)
    parent = six_helpers(usage)
    child = Charged(lambda request: Reply(tool_calls=[call("wait_for_news")], usage=usage))
    result, children, _ = await run_tree(
        parent,
        child,
        {"wall_time_s": 1.0},
        child_limits={"wall_time_s": 600},
        child_tools=(wait_for_news,),
    )

    assert result.outcome is Outcome.LIMIT and isinstance(result.error, WallTimeExceeded)
    assert len(children) == 6
    for child_result in children:
        # stopped by the parent's 1 s, not by its own 600 s
        assert child_result.outcome is Outcome.LIMIT
        assert isinstance(child_result.error, WallTimeExceeded)
        assert "1 s, set on the run that started it" in str(child_result.error)
    assert_invariant(result.messages)


# -- an agent delegating to itself -------------------------------------------------------------
def self_delegating(
    usage: Usage, limits: dict[str, Any], *, priced: bool = False
) -> tuple[tether.Agent, Charged, Outcomes]:
    """An agent whose every answer hands two tasks to a copy of itself (through
    ``agent.run()`` in a tool: such runs join the caller's tree too)."""
    seen = Outcomes()
    model = Charged(
        lambda request: Reply(
            tool_calls=[
                call("delegate", task=f"{request.messages[0].text}.{len(request.messages)}{i}")
                for i in range(2)
            ],
            usage=usage,
            pause=0.001,
        ),
        priced=priced,
    )
    agents: list[tether.Agent] = []

    @tether.tool
    async def delegate(task: str) -> str:
        """Hand a task to another copy of this agent."""
        result = await agents[0].run(task)
        return f"{result.outcome.value}: {result.output}"

    agent = tether.Agent(
        model.provider,
        tools=[delegate],
        config=Config(),
        limits=limits,
        plugins=[seen],
        entry_points=False,
    )
    agents.append(agent)
    return agent, model, seen


async def test_a_self_delegating_agent_on_default_limits_stays_within_max_turns() -> None:
    agent, model, seen = self_delegating(Usage(input_tokens=10, output_tokens=5), {})
    result = await agent.run("t")

    assert len(model.usages) <= LimitsConfig().max_turns  # 50 for the whole tree
    assert result.outcome is Outcome.LIMIT and isinstance(result.error, MaxTurnsExceeded)
    assert len(seen.results) > 1
    assert all(r.outcome is Outcome.LIMIT for r in seen.results)


async def test_the_tree_cap_bounds_model_calls_whatever_max_turns_says() -> None:
    agent, model, seen = self_delegating(
        Usage(input_tokens=10, output_tokens=5),
        {"max_turns": 1000, "max_tree_model_calls": 30, "max_run_depth": 8},
    )
    result = await agent.run("t")

    assert len(model.usages) == 30
    assert isinstance(result.error, MaxTurnsExceeded)
    assert "limits.max_tree_model_calls = 30" in str(result.error)
    assert all(r.outcome is Outcome.LIMIT for r in seen.results)


async def test_a_self_delegating_agent_stays_within_its_token_budget() -> None:
    usage = Usage(input_tokens=300, output_tokens=100)
    agent, model, seen = self_delegating(usage, {"max_total_tokens": 3000, "max_run_depth": 8})
    result = await agent.run("t")

    assert tokens(model.usages) < 3000 + 400
    assert isinstance(result.error, TokenBudgetExceeded)
    assert all(r.outcome is Outcome.LIMIT for r in seen.results)


async def test_a_self_delegating_agent_stays_within_its_cost_budget() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100)  # $0.003 a call
    agent, model, seen = self_delegating(
        usage, {"max_cost_usd": 0.02, "max_run_depth": 8}, priced=True
    )
    result = await agent.run("t")

    assert dollars(model.usages) < 0.02 + 0.003 + 1e-12
    assert isinstance(result.error, CostBudgetExceeded)
    assert all(r.outcome is Outcome.LIMIT for r in seen.results)


async def test_a_self_delegating_agent_stops_at_the_outer_deadline() -> None:
    agent, _, seen = self_delegating(
        Usage(input_tokens=10, output_tokens=5),
        {"wall_time_s": 0.5, "max_turns": 100_000, "max_tree_model_calls": None},
    )
    # each copy would get its own 0.5 s from its start; the tree gets 0.5 s in all
    result = await agent.run("t")

    assert isinstance(result.error, WallTimeExceeded)
    nested = [r for r in seen.results if r is not result]
    assert nested and all(r.outcome is Outcome.LIMIT for r in seen.results)
    assert all(isinstance(r.error, (WallTimeExceeded, MaxTurnsExceeded)) for r in nested)


# -- what a spent budget refuses ----------------------------------------------------------------
async def test_a_parent_with_no_budget_left_does_not_start_another_sub_agent() -> None:
    usage = Usage(input_tokens=10, output_tokens=5)

    def child_reply(request: ModelRequest) -> Reply:
        if len(request.messages) == 1:
            return Reply(tool_calls=[call("note", n=1)], usage=usage)
        return Reply(text="child answer", usage=usage)

    child = Charged(child_reply)
    parent = Charged(
        lambda request: Reply(
            tool_calls=[
                call("helper", task="first", id="p1"),
                call("helper", task="second", id="p2"),
            ],
            usage=usage,
        )
    )
    seen = Outcomes()
    helper = tether.Agent(
        child.provider, tools=[note], config=Config(), plugins=[seen], entry_points=False
    )
    top = tether.Agent(
        parent.provider,
        tools=[helper.as_tool("helper", "Helps.")],
        config=Config(),
        limits={"max_turns": 3},
        parallel_tools=False,  # one after the other: the first spends what is left
        entry_points=False,
    )
    events = [e async for e in top.stream("go")]
    result = events[-1].result  # type: ignore[attr-defined]

    second = next(e for e in events if isinstance(e, ToolEnd) and e.call_id == "p2")
    assert second.is_error and "`helper` was not started" in second.result.text
    assert not [e for e in events if isinstance(e, Nested) and e.call_id == "p2"]
    assert len(seen.results) == 1 and seen.results[0].ok  # only the first sub-agent ran
    assert len(child.usages) == 2
    assert result.outcome is Outcome.LIMIT and result.turns == 3


@pytest.mark.parametrize("kind", ["tokens", "cost"])
async def test_a_budget_reached_exactly_stops_the_run(kind: str) -> None:
    ran: list[int] = []

    @tether.tool
    def act(n: int) -> str:
        """Act."""
        ran.append(n)
        return "done"

    if kind == "tokens":
        usage, limits = Usage(input_tokens=20, output_tokens=10), {"max_total_tokens": 30}
    else:  # $2 + $1: exactly the budget
        usage, limits = Usage(input_tokens=1_000_000, output_tokens=100_000), {"max_cost_usd": 3.0}
    model = Charged(
        lambda request: Reply(tool_calls=[call("act", n=len(request.messages))], usage=usage),
        priced=kind == "cost",
    )
    agent = tether.Agent(
        model.provider, tools=[act], config=Config(), limits=limits, entry_points=False
    )
    result = await agent.run("go")

    assert result.outcome is Outcome.LIMIT
    assert isinstance(result.error, TokenBudgetExceeded if kind == "tokens" else CostBudgetExceeded)
    assert ran == [] and result.turns == 1
    assert "Not run" in result.messages[-1].tool_results[0].text


@pytest.mark.parametrize("kind", ["tokens", "cost"])
async def test_early_dispatch_starts_nothing_once_the_budget_is_spent(kind: str) -> None:
    """A tool that spends budget outside the loop (its own model call, charged to the run)
    uses it up mid-response: the calls announced after it must not start early."""
    probed: list[str] = []

    @tether.tool(read_only=True)
    async def consult(question: str, ctx: tether.ToolContext) -> str:
        """Ask an outside model; its usage is charged to this run."""
        spent = Usage(input_tokens=5000, output_tokens=0)
        ctx.scope.charge(
            RunResult(
                outcome=Outcome.COMPLETED,
                output="",
                messages=[],
                session_id="outside",
                usage=spent,
                cost=PRICING.cost(spent),
                turns=1,
            )
        )
        return "an answer"

    @tether.tool(read_only=True)
    async def probe(path: str) -> str:
        """Look at a file."""
        probed.append(path)
        return "contents"

    limits = {"max_total_tokens": 1000} if kind == "tokens" else {"max_cost_usd": 0.005}
    provider = ScriptedProvider(
        [
            Reply(
                tool_calls=[
                    call("consult", question="q"),
                    call("probe", path="a.txt"),
                    call("probe", path="b.txt"),
                ],
                pause=0.001,  # the stream goes on after each call is announced
            ),
            Reply(text="never"),
        ],
        capabilities=ModelCapabilities(pricing=PRICING) if kind == "cost" else None,
    )
    agent = tether.Agent(
        provider, tools=[consult, probe], config=Config(), limits=limits, entry_points=False
    )
    result = await agent.run("go")

    assert result.outcome is Outcome.LIMIT
    assert isinstance(result.error, TokenBudgetExceeded if kind == "tokens" else CostBudgetExceeded)
    assert probed == []


async def test_the_loop_detector_forgets_failures_after_a_call_succeeds() -> None:
    attempts: list[str] = []

    @tether.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        attempts.append(url)
        raise tether.ToolError("The server did not answer.")

    @tether.tool
    def ping() -> str:
        """Check the network."""
        return "pong"

    replies = [
        Reply(tool_calls=[call("fetch", url="https://example.test")]),
        Reply(tool_calls=[call("fetch", url="https://example.test")]),
        Reply(tool_calls=[call("ping")]),
        Reply(tool_calls=[call("fetch", url="https://example.test")]),
        Reply(text="The site is down."),
    ]
    agent = tether.Agent(
        ScriptedProvider(replies),
        tools=[fetch, ping],
        config=Config(),
        limits={"loop_threshold": 3},
        entry_points=False,
    )
    result = await agent.run("is the site up?")

    assert result.ok and result.output == "The site is down."
    assert len(attempts) == 3 and result.tool_errors == 3


async def test_a_sub_agent_counts_its_model_calls_against_the_parent_as_they_start() -> None:
    """The events of the tree: the parent's RunStart, then the children's, all under the
    parent's one stream; the child's turns appear in the parent's result."""
    usage = Usage(input_tokens=10, output_tokens=5)
    parent, child = six_helpers(usage), busy_child(usage)
    result, children, events = await run_tree(parent, child, {"max_turns": 13})
    starts = [e for e in events if isinstance(e, Nested) and isinstance(e.event, RunStart)]
    assert len(starts) == 6
    assert result.turns == sum(r.turns for r in children) + len(parent.usages) == 13


async def test_a_sub_agents_usage_counts_once_against_the_budget() -> None:
    """The child's 100 tokens are charged as they happen, not again when it returns: with
    a budget of 350 the parent still gets its third call (100 + 100 + 100 < 350)."""
    usage = Usage(input_tokens=80, output_tokens=20)
    child = Charged(lambda request: Reply(text="child answer", usage=usage))

    def reply(request: ModelRequest) -> Reply:
        if len(request.messages) == 1:
            return Reply(tool_calls=[call("helper", task="look")], usage=usage)
        return Reply(tool_calls=[call("note", n=len(request.messages))], usage=usage)

    parent = Charged(reply)
    result, children, _ = await run_tree(parent, child, {"max_total_tokens": 350})

    assert [r.outcome for r in children] == [Outcome.COMPLETED]
    assert len(parent.usages) == 3 and result.usage.total_tokens == 400
    assert isinstance(result.error, TokenBudgetExceeded)
