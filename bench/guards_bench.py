"""What the run's guards cost: secret scrubbing, strict argument checks, result building,
and the deadline watchdog of a model stream, in µs per operation (CPU time, median of 5).

The deadline figure is the cost of one streamed model call of 200 deltas from the
scripted provider through the guard (idle timeout and wall time on) against the
provider's bare stream, as a ratio measured in the same run.

Run: ``python bench/guards_bench.py``. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from tether.arguments import prepare_arguments
from tether.config import LimitsConfig
from tether.deadlines import guarded_stream
from tether.guard import RunGuard
from tether.messages import Message, TextBlock
from tether.provider import ModelRequest
from tether.scrub import scrub
from tether.testing import Reply, ScriptedProvider
from tether.tool_results import tool_result
from tether.tools import tool


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    samples = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(number):
            fn()
        samples.append((time.process_time() - start) / number * 1e6)
    return round(statistics.median(samples), 2)


@tool
def add(a: int, b: int, note: str = "") -> int:
    """Add."""
    return a + b


def stream_us(limits: LimitsConfig | None, deltas: int = 200, calls: int = 200) -> float:
    """µs per streamed call; ``limits=None``: the provider's stream, unwrapped."""
    provider = ScriptedProvider(handler=lambda request: Reply(chunks=["x"] * deltas))
    provider.record_requests = False
    request = ModelRequest(model="scripted-model", messages=[Message.user("hi")])

    async def run() -> float:
        guard = RunGuard(limits or LimitsConfig())
        guard.start()
        samples = []
        for _ in range(5):
            start = time.process_time()
            for _ in range(calls):
                if limits is None:
                    async for _event in provider.stream(request):
                        pass
                else:
                    async for _event in guarded_stream(provider, request, guard):
                        pass
            samples.append((time.process_time() - start) / calls * 1e6)
        return statistics.median(samples)

    return asyncio.run(run())


def main() -> None:
    line = Message(role="assistant", content=[TextBlock(text="A typical answer. " * 70)])
    json_line = line.to_json()
    big = "x = compute(a, b)  # a line of a file\n" * 1300
    arguments = {"a": 1, "b": 2, "note": "remember the milk"}
    guarded = stream_us(LimitsConfig(stream_idle_timeout_s=120, wall_time_s=600))
    raw = stream_us(None)
    results = {
        "scrub_short_us": per_call_us(lambda: scrub("3"), 20000),
        "scrub_1kb_line_us": per_call_us(lambda: scrub(json_line), 2000),
        "scrub_50kb_us": per_call_us(lambda: scrub(big), 50),
        "prepare_arguments_us": per_call_us(
            lambda: prepare_arguments(arguments, None, add.parameters), 20000
        ),
        "tool_result_int_us": per_call_us(lambda: tool_result("c", 3, tool_name="add"), 20000),
        "tool_result_50kb_us": per_call_us(lambda: tool_result("c", big, tool_name="t"), 50),
        "stream_200_deltas_guarded_us": round(guarded, 1),
        "stream_200_deltas_raw_us": round(raw, 1),
        "guarded_over_raw": round(guarded / raw, 3),
    }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
