"""What limits over the tree of runs cost.

- ``budget_over_free_cpu``: the harness's CPU time per model round trip (one run, the
  model calls a tool 200 times) with a token and cost budget, over the same run without
  one: the ledger's admission and charging on every call.
- ``parallel_budget_over_free_wall``: wall time of six parallel sub-agents whose model
  streams take 20 ms each (three calls apiece), with a token budget on the parent over
  without: under a budget their model calls take turns (the price of the
  one-call bound); their tools still run in parallel.

Prints one JSON line on stdout.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

import tether
from tether.config import Config
from tether.messages import Usage
from tether.provider import ModelCapabilities, ModelRequest, Pricing
from tether.testing import Reply, ScriptedProvider, call

PRICED = ModelCapabilities(pricing=Pricing(input=1.0, output=1.0))


@tether.tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def loop_cpu_us(limits: dict[str, Any], calls: int = 200) -> float:
    """CPU µs per model round trip of one run making ``calls`` tool calls."""

    def reply(request: ModelRequest) -> Reply:
        if len(request.messages) >= 2 * calls:
            return Reply(text="done")
        return Reply(tool_calls=[call("add", a=1, b=len(request.messages))])

    samples = []
    for _ in range(5):
        provider = ScriptedProvider(handler=reply, capabilities=PRICED)
        provider.record_requests = False
        agent = tether.Agent(
            provider,
            tools=[add],
            config=Config(),
            limits={"max_turns": calls + 10, "max_tree_model_calls": None, **limits},
            entry_points=False,
        )
        start = time.process_time()
        result = agent.run_sync("go")
        samples.append((time.process_time() - start) / result.turns * 1e6)
        assert result.ok, result.error
    return statistics.median(samples)


def parallel_wall_s(limits: dict[str, Any]) -> float:
    """Wall seconds of six parallel sub-agents, three 20 ms model calls each."""

    def child(request: ModelRequest) -> Reply:
        if len(request.messages) >= 5:
            return Reply(text="found", chunks=["fo", "und"], pause=0.01)
        return Reply(tool_calls=[call("add", a=1, b=2)], pause=0.02)

    def parent(request: ModelRequest) -> Reply:
        if len(request.messages) == 1:
            return Reply(tool_calls=[call("helper", task=f"part {i}") for i in range(6)])
        return Reply(text="all done")

    helper = tether.Agent(
        ScriptedProvider(handler=child), tools=[add], config=Config(), entry_points=False
    )
    top = tether.Agent(
        ScriptedProvider(handler=parent, usage=Usage(input_tokens=1, output_tokens=1)),
        tools=[helper.as_tool("helper", "Helps.")],
        config=Config(),
        limits=limits,
        entry_points=False,
    )
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        result = asyncio.run(top.run("go"))
        samples.append(time.perf_counter() - start)
        assert result.ok, result.error
    return statistics.median(samples)


def main() -> None:
    print("loop CPU without and with a budget ...", file=sys.stderr)
    free = loop_cpu_us({})
    budget = loop_cpu_us({"max_total_tokens": 10**9, "max_cost_usd": 10**6})
    print("six parallel sub-agents without and with a budget ...", file=sys.stderr)
    parallel_free = parallel_wall_s({})
    parallel_budget = parallel_wall_s({"max_total_tokens": 10**9})
    print(
        json.dumps(
            {
                "loop_free_cpu_us_per_rt": round(free, 1),
                "loop_budget_cpu_us_per_rt": round(budget, 1),
                "budget_over_free_cpu": round(budget / free, 3),
                "parallel_free_wall_s": round(parallel_free, 3),
                "parallel_budget_wall_s": round(parallel_budget, 3),
                "parallel_budget_over_free_wall": round(parallel_budget / parallel_free, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
