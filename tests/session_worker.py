"""One worker process of the shared-session test: RUNS runs on one named session.

    python session_worker.py SESSIONS_JSON NAME LABEL RUNS

Each run asks a tool call and then answers; a run refused because another worker has
the session prints nothing into it. Prints one JSON object: the prompts of the runs
that completed, how many were refused, and any other outcome (which the test fails on).
"""

from __future__ import annotations

import asyncio
import json
import sys

import tether
from tether.config import parse_config
from tether.errors import SessionLockedError
from tether.testing import Reply, ScriptedProvider, call


async def main(sessions: dict[str, object], name: str, label: str, runs: int) -> None:
    @tether.tool
    async def work(q: str) -> str:
        """Do a little work."""
        await asyncio.sleep(0.002)  # long enough for the other worker to try meanwhile
        return f"worked on {q}"

    replies: list[Reply] = []
    for index in range(runs):
        replies += [Reply(tool_calls=[call("work", q=f"{label}-{index}")]), Reply(text="done")]
    config = parse_config({"sessions": sessions, "limits": {"wall_time_s": 20}})
    agent = tether.Agent(ScriptedProvider(replies), tools=[work], config=config)
    completed: list[str] = []
    refused = 0
    other: list[str] = []
    for index in range(runs):
        prompt = f"{label}-{index}"
        try:
            result = await agent.run(prompt, session=name)
        except SessionLockedError:
            refused += 1
            continue
        except Exception as exc:
            other.append(f"{type(exc).__name__}: {exc}")
            continue
        if result.error is None and result.output == "done":
            completed.append(prompt)
        else:
            other.append(f"{result.outcome}: {result.error!r}")
    await agent.aclose()
    print(json.dumps({"completed": completed, "refused": refused, "other": other}))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])))
