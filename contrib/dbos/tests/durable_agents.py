"""The agent the durable-run tests run on their workers: a rule-based model (so any
worker, after any crash, answers the same history the same way) and a tool whose side
effect is a line appended to a ledger file, deduplicated on its idempotency key.

Prompts look like ``task 7`` with optional words ``slow-model`` and ``slow-tool``: the
model answers a prompt with one ``append_line`` call, and the tool's result with
``done task 7``. With ``slow-model`` (first call only) or ``slow-tool``, the step writes
a marker file ``markers/<model|tool>-<task>.<pid>`` and then waits until the file
``markers/release-<task>`` exists, so a test can kill the worker inside that step and
let the step through once it is re-executed. Every model call and tool invocation is
logged (``model_calls``, ``invocations``). Paths are under ``DURABLE_TEST_DIR``.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

import tether
from tether.config import Config
from tether.events import TextDelta
from tether.messages import Message, StopReason, TextBlock, ToolCallBlock, Usage
from tether.provider import (
    BaseProvider,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    ToolCallReady,
)

HOLD_S = 60.0  # the longest a step waits for its release file


def _dir() -> Path:
    return Path(os.environ["DURABLE_TEST_DIR"])


async def _hold(kind: str, task: str) -> None:
    """Mark that this process is inside the step, then wait for the release file."""
    markers = _dir() / "markers"
    markers.mkdir(exist_ok=True)
    label = task.replace(" ", "_")
    release = markers / f"release-{label}"
    if release.exists():
        return
    (markers / f"{kind}-{label}.{os.getpid()}").write_text("")
    for _ in range(int(HOLD_S / 0.05)):
        if release.exists():
            return
        await asyncio.sleep(0.05)


def _log(name: str, line: str) -> None:
    with (_dir() / name).open("a") as file:
        file.write(line + "\n")


class RuleModel(BaseProvider):
    """Answers from the history alone (see the module docstring)."""

    name = "rules"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1]
        prompt = next(m.text for m in reversed(request.messages) if m.role == "user")
        task = " ".join(w for w in prompt.split() if w not in ("slow-model", "slow-tool"))
        _log("model_calls", f"{task}\t{'first' if last.role == 'user' else 'final'}")
        if last.role == "user":
            if "slow-model" in prompt:
                await _hold("model", task)
            yield TextDelta(f"Working on {task}. ")
            call = ToolCallBlock(
                id=f"call-{task.replace(' ', '-')}",
                name="append_line",
                arguments={"text": task, "slow": "slow-tool" in prompt},
            )
            yield ToolCallReady(call, 0)  # as the first-party providers announce calls
            message = Message(
                role="assistant", content=[TextBlock(text=f"Working on {task}. "), call]
            )
            stop = StopReason.TOOL_USE
        else:
            yield TextDelta(f"done {task}")
            message = Message(role="assistant", content=[TextBlock(text=f"done {task}")])
            stop = StopReason.END_TURN
        message.meta.model = "rules/v1"
        yield ModelResponse(
            message=message,
            stop_reason=stop,
            usage=Usage(input_tokens=10, output_tokens=5),
            model="rules/v1",
        )


@tether.tool
async def append_line(ctx: tether.ToolContext, text: str, slow: bool = False) -> str:
    """Append a line to the ledger, once per idempotency key."""
    directory = _dir()
    _log("invocations", f"{ctx.idempotency_key}\t{text}")
    ledger = directory / "ledger"
    with ledger.open("a+") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        done = any(line.split("\t", 1)[0] == ctx.idempotency_key for line in file)
        if not done:
            file.write(f"{ctx.idempotency_key}\t{text}\n")
            file.flush()
            os.fsync(file.fileno())
    if slow:
        await _hold("tool", text)
    return "already written" if done else "written"


def make_agent(config: Config) -> tether.Agent:
    return tether.Agent(RuleModel(), tools=[append_line], config=config)


def make_cautious_agent(config: Config) -> tether.Agent:
    """The same agent, but every ``append_line`` call needs a person's approval."""
    return tether.Agent(
        RuleModel(), tools=[append_line], config=config, permissions={"append_line": "ask"}
    )
