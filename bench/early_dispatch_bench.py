"""Early dispatch: wall time of one scripted turn whose three read-only tool calls are
streamed over two seconds, with the calls started after the response (early dispatch off)
and as each call is complete (on).

The model's response streams for 2.0 s; each of its three calls of ``slow_lookup`` (a
read-only tool that sleeps 0.6 s) is announced complete (``ToolCallReady``) at the time
the layout gives. A run is: prompt → that response → the three calls → a final answer
(streamed at once). Modes, alternated within every round so that load hits them alike:

- ``one_at_a_time``: ``parallel_tools=False`` (no early dispatch either);
- ``after_stream``: parallel calls started when the response has ended (early dispatch
  off, the behaviour before it existed);
- ``early``: early dispatch on (the default).

Layouts: ``spread`` announces the calls at 0.5, 1.0 and 1.5 s and the response goes on
(text after the calls) until 2.0 s; ``at_end`` announces them at 0.67, 1.33 and 2.0 s,
the last one as the response ends. Expected walls: spread 3.8 / 2.6 / 2.1 s; at_end
3.8 / 2.6 / 2.6 s (early dispatch cannot start a call before it is complete, and the
last call then ends 0.6 s after the response, as without it).

Run: ``python bench/early_dispatch_bench.py [--rounds 5]`` (progress on stderr, one JSON
line on stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from typing import Any

os.environ.setdefault("TETHER_RUN_LOG", "off")

import tether
from tether.config import Config
from tether.events import TextDelta
from tether.messages import Message, StopReason, TextBlock, ToolCallBlock, Usage
from tether.provider import BaseProvider, ModelRequest, ModelResponse, ToolCallReady

STREAM_S = 2.0
TOOL_S = 0.6
LAYOUTS: dict[str, list[tuple[float, str]]] = {
    # (seconds from the start of the response, what arrives then)
    "spread": [(0.5, "call"), (1.0, "call"), (1.5, "call"), (2.0, "text")],
    "at_end": [(2 / 3, "call"), (4 / 3, "call"), (2.0, "call")],
}
MODES = {
    "one_at_a_time": {"parallel_tools": False, "early_dispatch": False},
    "after_stream": {"parallel_tools": True, "early_dispatch": False},
    "early": {"parallel_tools": True, "early_dispatch": True},
}


class Timeline(BaseProvider):
    """First call: the layout's response; second call: a short final answer."""

    name = "timeline"

    def __init__(self, layout: list[tuple[float, str]]) -> None:
        super().__init__()
        self.layout = layout

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        if request.messages[-1].role == "tool":
            yield TextDelta("Done.")
            yield _response([TextBlock(text="Done.")], StopReason.END_TURN)
            return
        begin = time.perf_counter()
        calls: list[ToolCallBlock] = []
        for at, kind in self.layout:
            await asyncio.sleep(max(0.0, begin + at - time.perf_counter()))
            if kind == "call":
                call = ToolCallBlock(
                    id=f"call_{len(calls)}", name="slow_lookup", arguments={"key": len(calls)}
                )
                calls.append(call)
                yield ToolCallReady(call, len(calls) - 1)
            else:
                yield TextDelta("Looking these up.")
        yield _response([*calls, TextBlock(text="Looking these up.")], StopReason.TOOL_USE)


def _response(content: list[Any], stop: StopReason) -> ModelResponse:
    message = Message(role="assistant", content=content)
    message.meta.model = "timeline/m"
    return ModelResponse(message, stop, Usage(input_tokens=10, output_tokens=5), "timeline/m")


@tether.tool(read_only=True)
async def slow_lookup(key: int) -> str:
    """Look something up (slowly)."""
    await asyncio.sleep(TOOL_S)
    return f"value {key}"


async def one_run(layout: str, mode: str, cwd: str) -> float:
    agent = tether.Agent(
        Timeline(LAYOUTS[layout]),
        tools=[slow_lookup],
        config=Config(),
        cwd=cwd,
        entry_points=False,
        **MODES[mode],
    )
    started = time.perf_counter()
    result = await agent.run("look three things up")
    wall = time.perf_counter() - started
    assert result.outcome.value == "completed" and result.tool_calls == 3, result
    return wall


async def main(rounds: int) -> dict[str, Any]:
    walls: dict[str, dict[str, list[float]]] = {
        layout: {mode: [] for mode in MODES} for layout in LAYOUTS
    }
    order = list(MODES)
    with tempfile.TemporaryDirectory() as cwd:
        for number in range(rounds):
            for layout in LAYOUTS:
                for mode in order:
                    walls[layout][mode].append(await one_run(layout, mode, cwd))
            order = order[1:] + order[:1]  # rotate who goes first
            print(f"round {number + 1}/{rounds} done", file=sys.stderr)
    figures: dict[str, Any] = {"rounds": rounds, "stream_s": STREAM_S, "tool_s": TOOL_S}
    for layout, by_mode in walls.items():
        medians = {mode: statistics.median(values) for mode, values in by_mode.items()}
        pairs = zip(by_mode["after_stream"], by_mode["early"], strict=True)
        figures[layout] = {
            **{f"{mode}_wall_s": round(value, 3) for mode, value in medians.items()},
            "early_saves_s": round(medians["after_stream"] - medians["early"], 3),
            "after_stream_over_early": round(statistics.median(a / e for a, e in pairs), 3),
        }
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.rounds))))
