"""A collector that takes traces but not metrics, and one that is down: the problem is
reported once per process, and a failed export stops the other signal from trying too
(so exiting does not wait on a second export)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider
from tether.testing.http import FakeResponse, FakeServer, RecordedRequest
from tether_otel.plugin import shutdown
from tether_otel.providers import providers_for
from tether_otel.settings import parse_settings


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    from tether_otel import export_guard

    export_guard.install().reported = False
    yield
    shutdown()


def traces_only(request: RecordedRequest) -> FakeResponse:
    if request.path == "/v1/metrics":
        return FakeResponse(
            status=405, headers={"content-type": "text/plain"}, body=b"405 method not allowed"
        )
    return FakeResponse(status=200, headers={"content-type": "application/x-protobuf"}, body=b"")


def export_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name.startswith("opentelemetry") and r.levelno >= logging.WARNING
    ]


async def test_a_collector_without_metrics_gets_one_warning_not_one_per_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with FakeServer(traces_only) as collector:
        settings = {"endpoint": collector.url, "metric_interval_s": 3600}
        config = Config.model_validate({"observers": {"otel": settings}})
        tracer_provider, meter_provider = providers_for(parse_settings(settings))
        for _ in range(3):
            agent = tether.Agent(ScriptedProvider([Reply(text="hi")]), config=config)
            assert (await agent.run("hello")).ok
            tracer_provider.force_flush()  # type: ignore[attr-defined]
            assert meter_provider is not None
            meter_provider.force_flush()  # type: ignore[attr-defined]
        metrics = [r for r in collector.requests if r.path == "/v1/metrics"]
        traces = [r for r in collector.requests if r.path == "/v1/traces"]
    [warning] = export_warnings(caplog)
    assert "405" in warning.getMessage() and "not reported" in warning.getMessage()
    assert len(metrics) == 1  # refused once, not sent again
    assert len(traces) == 3  # traces still go out


def down(request: RecordedRequest) -> FakeResponse:
    return FakeResponse(status=503, headers={"content-type": "text/plain"}, body=b"unavailable")


async def test_a_collector_that_is_down_gives_one_warning_and_one_export_attempt_at_exit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with FakeServer(down) as collector:
        settings = {"endpoint": collector.url, "metric_interval_s": 3600}
        config = Config.model_validate({"observers": {"otel": settings}})
        agent = tether.Agent(ScriptedProvider([Reply(text="hi")]), config=config)
        assert (await agent.run("hello")).ok
        shutdown()  # what happens at exit: flush traces and metrics
        paths = [r.path for r in collector.requests]
    assert len(export_warnings(caplog)) == 1
    # the first signal's export failed; the other one was not attempted
    assert len(set(paths)) == 1, paths
