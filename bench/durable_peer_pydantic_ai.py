"""pydantic-ai's DBOS agent on the scenario of ``durable_peer_bench.py``; run by it, in
an environment of its own that has ``pydantic-ai-slim[dbos]`` (see ``bench/README.md``).

One run of ``rounds`` tool rounds: a ``FunctionModel`` answers each request with one call
of the tool ``noop`` until the history holds ``rounds`` results, then ``done``. The agent
is wrapped in ``DBOSAgent`` (each run is a DBOS workflow, each model request a step) and
the tool is a DBOS step of its own (``@DBOS.step``), so a crash never repeats a finished
model request or tool call: the guarantee tether's durable runs give. Prints one JSON
line naming itself, then makes one run per line ``run`` read from stdin and prints its
wall and CPU (all threads) seconds as a JSON line.

Usage: ``python durable_peer_pydantic_ai.py URL ROUNDS``
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import warnings
from importlib.metadata import version

from dbos import DBOS
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

warnings.simplefilter("ignore")  # DBOSAgent is deprecated in favour of DBOSDurability
from pydantic_ai.durable_exec.dbos import DBOSAgent  # noqa: E402


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = next(
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if getattr(p, "part_kind", "") == "user-prompt"
    )
    rounds = int(str(prompt).split()[-1])
    done = sum(
        1
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    )
    if done < rounds:
        return ModelResponse(parts=[ToolCallPart("noop", {"i": done}, tool_call_id=f"c{done}")])
    return ModelResponse(parts=[TextPart("done")])


@DBOS.step()
async def noop(i: int) -> str:
    """Do nothing."""
    return "ok"


def main() -> None:
    url, rounds = sys.argv[1], int(sys.argv[2])
    agent = Agent(FunctionModel(scripted), name="bench", tools=[noop])
    durable = DBOSAgent(agent)
    DBOS(config={"name": "peer-bench", "system_database_url": url, "log_level": "WARNING"})
    DBOS.launch()
    prompt = f"rounds {rounds}"

    async def serve() -> None:
        print(json.dumps({"framework": f"pydantic-ai {version('pydantic-ai-slim')} DBOSAgent",
                          "dbos": version("dbos")}), flush=True)  # fmt: skip
        for line in sys.stdin:
            if line.strip() != "run":
                break
            wall, cpu = time.perf_counter(), time.process_time()
            result = await durable.run(prompt)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert result.output == "done"
            print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)

    try:
        asyncio.run(serve())
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    main()
