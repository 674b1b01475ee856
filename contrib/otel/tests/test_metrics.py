"""Metric values are recorded with the context they were taken in; every observer of one
meter provider adds to the same tool-call counts."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_otel import OtelPlugin
from tether_otel.instruments import Instruments


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    out: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def agent(plugin: OtelPlugin) -> tether.Agent:
    model = ScriptedProvider([Reply(tool_calls=[call("add", a=1, b=2)]), Reply(text="3")])
    return tether.Agent(model, tools=[add], config=Config(), plugins=[plugin])


async def test_every_observer_of_a_meter_provider_counts_into_the_same_metrics() -> None:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    first = OtelPlugin(tracer_provider=TracerProvider(), meter_provider=meter_provider)
    second = OtelPlugin(tracer_provider=TracerProvider(), meter_provider=meter_provider)
    assert (await agent(first).run("go")).ok
    assert (await agent(second).run("go")).ok
    seen = points(reader)
    assert [p.value for p in seen["tether.tool.calls"]] == [2]
    durations = {
        p.attributes["gen_ai.operation.name"]: p.count
        for p in seen["gen_ai.client.operation.duration"]
    }
    assert durations == {"chat": 4, "invoke_agent": 2}
    assert points(reader)["tether.tool.calls"][0].value == 2  # cumulative, counted once
    meter_provider.shutdown()


async def test_values_carry_the_trace_context_they_were_taken_in() -> None:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    tracer_provider = TracerProvider()
    plugin = OtelPlugin(tracer_provider=tracer_provider, meter_provider=meter_provider)
    with tracer_provider.get_tracer("app").start_as_current_span("request") as request:
        assert (await agent(plugin).run("go")).ok
    (chat,) = [
        p
        for p in points(reader)["gen_ai.client.operation.duration"]
        if p.attributes["gen_ai.operation.name"] == "chat"
    ]
    assert chat.exemplars  # sampled from the application's span, current during the run
    assert {e.trace_id for e in chat.exemplars} == {request.get_span_context().trace_id}
    meter_provider.shutdown()


def test_a_meter_provider_that_cannot_be_weakly_referenced_still_gets_instruments() -> None:
    class Provider:
        __slots__ = ("inner",)

        def __init__(self) -> None:
            self.inner = MeterProvider(metric_readers=[InMemoryMetricReader()])

        def get_meter(self, *args: Any, **kwargs: Any) -> Any:
            return self.inner.get_meter(*args, **kwargs)

    assert Instruments.of(Provider()).token_usage is not None  # type: ignore[arg-type]
