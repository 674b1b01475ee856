"""Tracer and meter providers for the configured exporter, built once per process.

The OpenTelemetry SDK reads the standard variables itself: ``OTEL_EXPORTER_OTLP_ENDPOINT``
(and its ``_TRACES_`` / ``_METRICS_`` forms), ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*``,
``OTEL_METRIC_EXPORT_INTERVAL``. ``endpoint`` and ``service_name`` in the settings take
precedence over them. The providers flush and shut down when the process exits.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .settings import OtelSettings

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["EXPORT_TIMEOUT_S", "forget_all", "providers_for"]

EXPORT_TIMEOUT_S = 1.0
"""Seconds an export may take, retries included, unless ``OTEL_EXPORTER_OTLP_TIMEOUT``
(or its ``_TRACES_``/``_METRICS_`` forms) says otherwise: short, so that a command whose
collector is unreachable still exits within about a second (the SDK's default is 10 s
per export; after a failure the other signal is not sent, see
:mod:`tether_otel.export_guard`)."""

_BUILT: dict[OtelSettings, tuple[TracerProvider, MeterProvider | None]] = {}
_LOCK = threading.Lock()


def providers_for(settings: OtelSettings) -> tuple[TracerProvider, MeterProvider | None]:
    """The (tracer, meter) providers for ``settings``; the meter is ``None`` when
    ``metrics = false``. The same settings always give the same providers."""
    with _LOCK:
        built = _BUILT.get(settings)
        if built is None:
            built = _BUILT[settings] = _build(settings)
        return built


def forget_all() -> None:
    """Shut down the SDK providers built here (flushing what they hold) and forget them."""
    with _LOCK:
        built = list(_BUILT.items())
        _BUILT.clear()
    for settings, (tracer_provider, meter_provider) in built:
        if settings.exporter == "global":
            continue
        for provider in (tracer_provider, meter_provider):
            shutdown = getattr(provider, "shutdown", None)
            if callable(shutdown):
                shutdown()


def _build(settings: OtelSettings) -> tuple[TracerProvider, MeterProvider | None]:
    from opentelemetry import metrics, trace

    exporter = settings.exporter
    if exporter == "auto":
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

        exporter = (
            "global" if isinstance(trace.get_tracer_provider(), SdkTracerProvider) else "otlp"
        )
    if exporter == "global":
        return (
            trace.get_tracer_provider(),
            metrics.get_meter_provider() if settings.metrics else None,
        )
    return _sdk_providers(settings, console=exporter == "console")


def _sdk_providers(
    settings: OtelSettings, *, console: bool
) -> tuple[TracerProvider, MeterProvider | None]:
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    attributes = {SERVICE_NAME: settings.service_name} if settings.service_name else {}
    resource = Resource.create(attributes)
    if not settings.service_name and str(resource.attributes.get(SERVICE_NAME, "")).startswith(
        "unknown_service"
    ):
        resource = resource.merge(Resource({SERVICE_NAME: "tether"}))
    tracer_provider = SdkTracerProvider(resource=resource)
    meter_provider: SdkMeterProvider | None = None
    interval = (
        int(settings.metric_interval_s * 1000) if settings.metric_interval_s is not None else None
    )
    if console:
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
        if settings.metrics:
            reader = PeriodicExportingMetricReader(ConsoleMetricExporter(), interval)
            meter_provider = SdkMeterProvider(resource=resource, metric_readers=[reader])
        return tracer_provider, meter_provider
    from .export_guard import Breaker, GuardedMetricExporter, GuardedSpanExporter, install

    install()
    breaker = Breaker()
    base = settings.endpoint.rstrip("/") if settings.endpoint else None
    timeout = None if _timeout_configured() else EXPORT_TIMEOUT_S
    span_exporter = GuardedSpanExporter(
        endpoint=f"{base}/v1/traces" if base else None, timeout=timeout, breaker=breaker
    )
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    if settings.metrics:
        metric_exporter = GuardedMetricExporter(
            endpoint=f"{base}/v1/metrics" if base else None, timeout=timeout, breaker=breaker
        )
        reader = PeriodicExportingMetricReader(metric_exporter, interval)
        meter_provider = SdkMeterProvider(resource=resource, metric_readers=[reader])
    return tracer_provider, meter_provider


def _timeout_configured() -> bool:
    import os

    return any(
        os.environ.get(name)
        for name in (
            "OTEL_EXPORTER_OTLP_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        )
    )
