"""Configured the way a user configures it (``[observers.otel]`` and ``OTEL_*`` variables,
through the ``otel`` entry point), tether-otel exports spans and metrics over OTLP/HTTP to
a receiver on loopback that parses the protobuf the way a collector does; it stays off
when not configured; HTTP requests made by tools carry the trace context."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import tether
from tether.config import Config
from tether.errors import ConfigError
from tether.testing import Reply, ScriptedProvider, call
from tether_otel.plugin import observer_for, shutdown
from tether_otel.providers import providers_for
from tether_otel.settings import parse_settings
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest


def ok(request: RecordedRequest) -> FakeResponse:
    return FakeResponse(status=200, headers={"Content-Type": "application/x-protobuf"}, body=b"")


@pytest.fixture
def collector() -> Iterator[FakeServer]:
    with FakeServer(ok) as server:
        yield server


@pytest.fixture(autouse=True)
def no_otel_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_TRACES_EXPORTER",
        "OTEL_SDK_DISABLED",
        "OTEL_SERVICE_NAME",
    ):
        monkeypatch.delenv(name, raising=False)
    yield
    shutdown()  # flush and stop the exporters while the receiver still listens


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        value = item.value
        kind = value.WhichOneof("value")
        out[item.key] = getattr(value, kind) if kind else None
    return out


async def test_spans_and_metrics_reach_an_otlp_receiver_on_loopback(
    collector: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "billing-agent")
    settings = {"endpoint": collector.url, "metric_interval_s": 3600}
    config = Config.model_validate({"observers": {"otel": settings}})
    provider = ScriptedProvider([Reply(tool_calls=[call("add", a=2, b=3)]), Reply(text="5")])
    result = await tether.Agent(provider, tools=[add], config=config).run("add 2 and 3")
    assert result.ok
    tracer_provider, meter_provider = providers_for(parse_settings(settings))
    assert tracer_provider.force_flush()  # type: ignore[attr-defined]
    assert meter_provider is not None and meter_provider.force_flush()  # type: ignore[attr-defined]

    traces = [r for r in collector.requests if r.path == "/v1/traces"]
    assert traces and all(r.headers["content-type"] == "application/x-protobuf" for r in traces)
    spans = []
    for request in traces:
        message = ExportTraceServiceRequest()
        message.ParseFromString(request.body)
        for resource_spans in message.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            assert resource["service.name"] == "billing-agent"
            for scope in resource_spans.scope_spans:
                assert scope.scope.name == "tether_otel"
                spans.extend(scope.spans)
    names = sorted(s.name for s in spans)
    assert names == [
        "chat scripted-model",
        "chat scripted-model",
        "execute_tool add",
        "invoke_agent",
    ]
    run = next(s for s in spans if s.name == "invoke_agent")
    assert attributes(run.attributes)["tether.run.id"] == result.run_id
    assert all(s.trace_id == run.trace_id for s in spans)
    assert all(s.parent_span_id == run.span_id for s in spans if s is not run)

    metrics_requests = [r for r in collector.requests if r.path == "/v1/metrics"]
    assert metrics_requests
    names_seen = set()
    for request in metrics_requests:
        message = ExportMetricsServiceRequest()
        message.ParseFromString(request.body)
        for resource_metrics in message.resource_metrics:
            for scope in resource_metrics.scope_metrics:
                names_seen.update(m.name for m in scope.metrics)
    assert {
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "tether.tool.calls",
    } <= names_seen


def test_nothing_is_exported_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    assert observer_for({}, Config()) is None
    assert observer_for({"enabled": False, "endpoint": "http://127.0.0.1:9"}, Config()) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    assert observer_for({}, Config()) is not None
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert observer_for({}, Config()) is None


def test_bad_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'endpont'.*Valid keys"):
        parse_settings({"endpont": "http://x"})
    with pytest.raises(ConfigError, match="capture_content must be a bool"):
        parse_settings({"capture_content": "yes"})
    with pytest.raises(ConfigError, match='exporter = "jaeger" is not one of'):
        parse_settings({"exporter": "jaeger"})
    with pytest.raises(ConfigError, match="metrics must be a bool"):
        parse_settings({"metrics": "no"})


def test_spans_wait_in_the_batch_processor_until_it_exports_them(
    collector: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``[observers.otel]`` builds batches spans under the standard ``OTEL_BSP_*``
    settings: nothing is sent until the batch is due (or flushed)."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
    tracer_provider, _ = providers_for(
        parse_settings({"endpoint": collector.url, "metrics": False})
    )
    tracer = tracer_provider.get_tracer("app")
    tracer.start_span("first").end()
    assert collector.requests == []  # waiting for the batch
    assert tracer_provider.force_flush()  # type: ignore[attr-defined]
    (request,) = collector.requests
    message = ExportTraceServiceRequest()
    message.ParseFromString(request.body)
    assert [s.name for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans] == [
        "first"
    ]


async def test_http_requests_made_by_a_tool_carry_its_trace_context(
    collector: FakeServer,
) -> None:
    """With ``instrument_httpx``, an httpx request inside a tool is a child of the tool's
    ``execute_tool`` span, and the server receives that trace in ``traceparent``."""
    with FakeServer(lambda r: FakeResponse.json({"temperature": 21})) as weather:

        @tether.tool
        async def forecast(city: str) -> str:
            """The forecast for a city."""
            async with httpx.AsyncClient() as client:
                response = await client.get(f"{weather.url}/forecast", params={"city": city})
            return str(response.json()["temperature"])

        settings = {"endpoint": collector.url, "instrument_httpx": True, "metrics": False}
        config = Config.model_validate({"observers": {"otel": settings}})
        provider = ScriptedProvider(
            [Reply(tool_calls=[call("forecast", city="Porto")]), Reply(text="21")]
        )
        result = await tether.Agent(provider, tools=[forecast], config=config).run("Porto?")
        assert result.ok
        tracer_provider, _ = providers_for(parse_settings(settings))
        assert tracer_provider.force_flush()  # type: ignore[attr-defined]
        (request,) = weather.requests

    spans = []
    for exported in collector.requests:
        if exported.path == "/v1/traces":
            message = ExportTraceServiceRequest()
            message.ParseFromString(exported.body)
            spans.extend(
                span for rs in message.resource_spans for ss in rs.scope_spans for span in ss.spans
            )
    tool = next(s for s in spans if s.name == "execute_tool forecast")
    http_span = next(s for s in spans if s.name == "GET")
    assert http_span.parent_span_id == tool.span_id
    _, trace_id, span_id, _ = request.headers["traceparent"].split("-")
    assert trace_id == tool.trace_id.hex() and span_id == http_span.span_id.hex()
