"""pydantic-ai's side of ``tracing_bench.py``: its added cost per model round trip with
its OpenTelemetry instrumentation on, spans exported over OTLP/HTTP.

It runs in an environment with pydantic-ai (``pydantic-ai-slim``) and the OpenTelemetry
SDK and OTLP/HTTP exporter, not tether's (see bench/README.md), and is started by
``tracing_bench.py`` as a worker: ``python tracing_peer_pydantic_ai.py SINK_URL BLOCK``.
For each line ``round`` it reads on stdin, it times one block of every agent (in an order
that rotates with the round) and prints one JSON line: ``{agent: [wall_s, cpu_s]}``.

The scenario is ``overhead.py``'s A, as ``peers/bench_pydantic_ai.py`` scripts it: the
model (a ``FunctionModel``) calls the async tool ``add`` 50 times, one call per response,
then answers (51 model round trips per run).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from importlib.metadata import version
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage, UsageLimits

CALLS = 50
USAGE = RequestUsage(input_tokens=10, output_tokens=5)
NO_LIMITS = UsageLimits(request_limit=None)


class Script:
    i = 0


S = Script()


async def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if S.i < CALLS:
        S.i += 1
        part = ToolCallPart("add", {"a": S.i, "b": 1}, tool_call_id=f"c{S.i}")
        return ModelResponse(parts=[part], usage=USAGE)
    return ModelResponse(parts=[TextPart("done")], usage=USAGE)


def make_agent(settings: InstrumentationSettings | None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(model_fn), instructions="You add numbers.")

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        return a + b

    if settings is not None:
        agent.instrument = settings
    return agent


def main() -> None:
    sink, block = sys.argv[1], int(sys.argv[2])
    flushers: dict[str, list[Any]] = {}
    agents: dict[str, Agent[None, str]] = {"plain": make_agent(None)}

    def instrumented(name: str, *, metrics: bool, content: bool) -> None:
        tracer_provider = TracerProvider()
        exporter = OTLPSpanExporter(
            endpoint=f"{sink}/v1/traces", headers={"x-bench-agent": f"pydantic-ai {name}"}
        )
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()]) if metrics else None
        settings = InstrumentationSettings(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            include_content=content,
            include_binary_content=content,
        )
        agents[name] = make_agent(settings)
        flushers[name] = [p for p in (tracer_provider, meter_provider) if p is not None]

    instrumented("spans", metrics=False, content=False)
    instrumented("spans_and_metrics", metrics=True, content=False)
    instrumented("spans_with_content", metrics=False, content=True)

    async def one_run(agent: Agent[None, str]) -> None:
        S.i = 0
        result = await agent.run("go", usage_limits=NO_LIMITS)
        assert result.output == "done" and S.i == CALLS

    async def one_block(name: str) -> tuple[float, float]:
        gc.collect()
        agent = agents[name]
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(block):
            await one_run(agent)
        for provider in flushers.get(name, ()):
            provider.force_flush()
        return time.perf_counter() - wall, time.process_time() - cpu

    async def serve() -> None:
        names = list(agents)
        for name in names:  # warm up
            for _ in range(3):
                await one_run(agents[name])
            for provider in flushers.get(name, ()):
                provider.force_flush()
        print(json.dumps({"ready": "pydantic-ai", "version": version("pydantic-ai-slim")}))
        sys.stdout.flush()
        for turn, line in enumerate(sys.stdin):
            if line.strip() != "round":
                break
            order = names[turn % len(names) :] + names[: turn % len(names)]
            times = {name: await one_block(name) for name in order}
            print(json.dumps(times), flush=True)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
