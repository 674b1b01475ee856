"""A consumer that stops iterating ``agent.stream()`` and never closes it — keeps it
until the program ends, or drops it — leaves no asyncio error behind ("Task exception
was never retrieved", "an error occurred during closing of asynchronous generator"): the
stream is closed once, from the top, and its open tool calls are answered."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

import tether
from tether.config import Config
from tether.events import Nested, RunStart, TextDelta, ToolStart, TurnEnd
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call


@tether.tool
async def forever(n: int) -> str:
    """Wait until cancelled."""
    await asyncio.Event().wait()
    return "unreachable"


@tether.tool
def quick(n: int) -> str:
    """Answer at once (a sync tool, on tether's threads)."""
    return f"quick {n}"


def agent() -> tether.Agent:
    helper = tether.Agent(
        ScriptedProvider([Reply(tool_calls=[call("forever", n=9), call("quick", n=8)])] * 2),
        tools=[forever, quick],
        config=Config(),
    )
    model = ScriptedProvider(
        [
            Reply(
                text="Working on it.",
                chunk=4,
                tool_calls=[
                    call("quick", n=1),
                    call("helper", task="dig"),
                    call("forever", n=2),
                ],
            ),
            Reply(text="never reached"),
        ]
    )
    return tether.Agent(
        model, tools=[forever, quick, helper.as_tool("helper", "Helps.")], config=Config()
    )


def abandon(stop_at: type, how: str, session: InMemorySession) -> list[str]:
    """Run a program that abandons the stream at the first ``stop_at`` event; the
    messages asyncio's exception handler received."""
    problems: list[str] = []
    kept: list[Any] = []

    async def program() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: problems.append(str(context.get("message")))
        )
        stream = agent().stream("go", session=session)
        async for event in stream:
            if isinstance(event, stop_at):
                break
        if how == "kept":  # still referenced when the program ends
            kept.append(stream)
        else:  # dropped inside a reference cycle: the garbage collector finds it
            cycle: dict[str, Any] = {"stream": stream}
            cycle["self"] = cycle
            del stream, cycle
            gc.collect()
            for _ in range(20):
                await asyncio.sleep(0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(program())
        kept.clear()
        gc.collect()
    problems += [str(w.message) for w in caught]
    return problems


@pytest.mark.parametrize("how", ["kept", "dropped"])
@pytest.mark.parametrize("stop_at", [RunStart, TextDelta, TurnEnd, ToolStart, Nested])
def test_an_abandoned_stream_leaves_no_asyncio_error(stop_at: type, how: str) -> None:
    session = InMemorySession()
    assert abandon(stop_at, how, session) == []
    assert_invariant(session.messages)
