"""Property tests of limits over a tree of runs: for random trees of sub-agents (parallel
fan-out, nesting, either through ``as_tool`` or ``agent.run()`` inside a tool) and
random budgets, what the whole tree is charged never passes the outermost run's limits
by more than the documented bound — one model call's usage — and model calls never pass
them at all."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tether
from tether.config import Config, LimitsConfig
from tether.errors import LimitExceeded
from tether.events import Done
from tether.ledger import Ledger
from tether.messages import Usage
from tether.provider import ModelCapabilities, ModelRequest, Pricing
from tether.result import Outcome, RunResult
from tether.testing import Reply, ScriptedProvider, call

PRICING = Pricing(input=2.0, output=10.0)


@dataclass(frozen=True)
class Tree:
    fanout: list[int]
    """Sub-agents each run at a depth starts (0 past the end of the list)."""
    work: int
    """Tool calls each run makes after its sub-agents answered, before its answer."""
    usages: list[tuple[int, int]]
    """(input, output) tokens of successive model calls, cycled."""
    via: str
    """``as_tool`` or ``run`` (``agent.run()`` inside a tool)."""


trees = st.builds(
    Tree,
    fanout=st.lists(st.integers(0, 3), min_size=1, max_size=3),
    work=st.integers(0, 2),
    usages=st.lists(st.tuples(st.integers(1, 300), st.integers(0, 100)), min_size=1, max_size=8),
    via=st.sampled_from(["as_tool", "run"]),
)
budgets = st.builds(
    dict,
    max_turns=st.integers(1, 40),
    max_total_tokens=st.one_of(st.none(), st.integers(1, 3000)),
    max_cost_usd=st.one_of(st.none(), st.floats(0.0002, 0.01)),
)


class Recorder:
    def __init__(self) -> None:
        self.results: list[RunResult] = []

    @tether.hookimpl
    def register_observers(self, observers: Any) -> None:
        observers.add("recorder", self.observe)

    def observe(self, event: object) -> None:
        if isinstance(event, Done):
            self.results.append(event.result)


async def run_tree(tree: Tree, budget: dict[str, Any]) -> tuple[RunResult, list[Usage], Recorder]:
    charged: list[Usage] = []

    def reply(request: ModelRequest) -> Reply:
        path = request.messages[0].text
        depth = path.count(".")
        turn = (len(request.messages) - 1) // 2
        fanout = tree.fanout[depth] if depth < len(tree.fanout) else 0
        tokens_in, tokens_out = tree.usages[len(charged) % len(tree.usages)]
        usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
        charged.append(usage)
        if turn == 0 and fanout:
            calls = [call("delegate", task=f"{path}.{i}") for i in range(fanout)]
            return Reply(tool_calls=calls, usage=usage, pause=0.0005)
        if turn <= tree.work:
            return Reply(tool_calls=[call("note", n=turn)], usage=usage, pause=0.0005)
        return Reply(text=f"{path} done", usage=usage, pause=0.0005)

    @tether.tool
    def note(n: int) -> str:
        """Note."""
        return f"noted {n}"

    recorder = Recorder()
    provider = ScriptedProvider(handler=reply, capabilities=ModelCapabilities(pricing=PRICING))
    limits = {**budget, "max_run_depth": 8}

    def make(tools: list[Any]) -> tether.Agent:
        return tether.Agent(
            provider,
            tools=tools,
            config=Config(),
            limits=limits,
            plugins=[recorder],
            entry_points=False,
        )

    if tree.via == "run":
        agents: list[tether.Agent] = []

        @tether.tool
        async def delegate(task: str) -> str:
            """Hand a task on."""
            result = await agents[0].run(task)
            return f"{result.outcome.value}: {result.text}"

        agent = make([note, delegate])
        agents.append(agent)
    else:  # one agent per level, each offering the next as its sub-agent
        agent = make([note])
        for _ in tree.fanout:
            agent = make([note, agent.as_tool("delegate", "Delegate.", max_depth=8)])
    result = await agent.run("r")
    return result, charged, recorder


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees, budget=budgets)
def test_a_tree_is_never_charged_past_its_limits_by_more_than_one_call(
    tree: Tree, budget: dict[str, Any]
) -> None:
    result, charged, recorder = asyncio.run(run_tree(tree, budget))

    assert len(charged) <= budget["max_turns"]
    total = sum(u.input_tokens + u.output_tokens for u in charged)
    if budget["max_total_tokens"] is not None:
        largest = max(u.input_tokens + u.output_tokens for u in charged)
        assert total < budget["max_total_tokens"] + largest
    if budget["max_cost_usd"] is not None:
        largest_cost = max(PRICING.cost(u) for u in charged)
        assert sum(PRICING.cost(u) for u in charged) < budget["max_cost_usd"] + largest_cost + 1e-12
    for run in recorder.results:
        assert run.outcome in (Outcome.COMPLETED, Outcome.LIMIT)
        if run.outcome is Outcome.LIMIT:
            assert isinstance(run.error, LimitExceeded)
    if result.outcome is Outcome.COMPLETED:
        assert all(r.outcome is Outcome.COMPLETED for r in recorder.results)


@given(walls=st.lists(st.one_of(st.none(), st.floats(0.001, 1000.0)), min_size=1, max_size=6))
def test_a_childs_deadline_is_never_later_than_its_parents(walls: list[float | None]) -> None:
    parent: Ledger | None = None
    for wall in walls:
        before = time.perf_counter()
        node = Ledger(LimitsConfig(wall_time_s=wall), parent)
        node.start()
        if wall is not None:
            assert node.deadline is not None and node.deadline <= time.perf_counter() + wall
            assert node.deadline >= before + wall or (
                parent is not None and node.deadline == parent.deadline
            )
        if parent is not None and parent.deadline is not None:
            assert node.deadline is not None and node.deadline <= parent.deadline
        if parent is None and wall is None:
            assert node.deadline is None
        parent = node
