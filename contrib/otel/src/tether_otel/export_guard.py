"""Export problems reported once, and a process that exits promptly without a collector.

The OTLP exporters log every failed export (and every retry of it), so a collector that
accepts traces but not metrics (HTTP 405) printed an error for every run, and one that
is down printed six lines and held the process for seconds at exit. Here:

- the exporters' own log lines pass once per process: the first failure is reported as a
  warning naming what failed and saying that later failures are not reported; retry
  chatter and repeats are dropped;
- a signal whose export failed is not sent again for :data:`COOLDOWN_S` seconds, and the
  other signal to the same collector skips too (a collector that is down is down for
  both), so exiting flushes at most one export, which gives up after
  :data:`~tether_otel.providers.EXPORT_TIMEOUT_S`;
- metrics the collector refused are not sent again by this process.

The exporters are the SDK's OTLP/HTTP ones, subclassed at their public ``export``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics.export import MetricExportResult
from opentelemetry.sdk.trace.export import SpanExportResult

__all__ = ["COOLDOWN_S", "Breaker", "GuardedMetricExporter", "GuardedSpanExporter", "install"]

COOLDOWN_S = 30.0
"""Seconds nothing is sent to a collector after an export to it failed."""

_SDK_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
)


class Breaker:
    """Shared by the exporters of one collector: open for :data:`COOLDOWN_S` after a
    failure."""

    def __init__(self, cooldown: float = COOLDOWN_S) -> None:
        self.cooldown = cooldown
        self._failed_at: float | None = None
        self._succeeded_at: float | None = None
        self._lock = threading.Lock()

    def open(self) -> bool:
        with self._lock:
            return (
                self._failed_at is not None and time.monotonic() - self._failed_at < self.cooldown
            )

    def trip(self) -> None:
        with self._lock:
            self._failed_at = time.monotonic()

    def succeeded(self) -> None:
        with self._lock:
            self._succeeded_at = time.monotonic()

    def reachable(self) -> bool:
        """Whether an export to the collector succeeded within the cooldown."""
        with self._lock:
            at = self._succeeded_at
            return at is not None and time.monotonic() - at < self.cooldown


class GuardedSpanExporter(OTLPSpanExporter):
    """``OTLPSpanExporter`` that skips while its collector's :class:`Breaker` is open."""

    def __init__(self, *args: Any, breaker: Breaker, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.breaker = breaker

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if self.breaker.open():
            return SpanExportResult.FAILURE
        result = super().export(spans)
        if result is SpanExportResult.SUCCESS:
            self.breaker.succeeded()
        else:
            self.breaker.trip()
        return result


class GuardedMetricExporter(OTLPMetricExporter):
    """``OTLPMetricExporter`` that stops after its first failure (a collector that does
    not take metrics will not start to), and skips while its collector's breaker is open.
    A failure trips the breaker only when traces did not reach the collector lately
    (otherwise the collector is up and merely refuses metrics)."""

    def __init__(self, *args: Any, breaker: Breaker, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.breaker = breaker
        self.refused = False

    def export(
        self, metrics_data: Any, timeout_millis: float | None = None, **kwargs: Any
    ) -> MetricExportResult:
        if self.refused or self.breaker.open():
            return MetricExportResult.FAILURE
        result = super().export(metrics_data, timeout_millis, **kwargs)
        if result is not MetricExportResult.SUCCESS:
            self.refused = True
            if not self.breaker.reachable():
                self.breaker.trip()
        return result


class _Once(logging.Filter):
    """Lets the first export failure through, reworded as one warning; drops the rest."""

    def __init__(self) -> None:
        super().__init__("tether_otel")
        self.reported = False
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        text = record.getMessage()
        if "retrying" in text or "aborting retry" in text:
            return False
        with self._lock:
            if self.reported:
                return False
            self.reported = True
        record.msg = (
            "tether-otel: %s. Telemetry export is paused for %gs after a failure, and "
            "metrics a collector refused are not sent again; later export problems "
            "are not reported."
        )
        record.args = (text.rstrip("."), COOLDOWN_S)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_FILTER: _Once | None = None
_INSTALL_LOCK = threading.Lock()


def install() -> _Once:
    """Put the once-only filter on the SDK exporters' loggers (idempotent); returns it."""
    global _FILTER
    with _INSTALL_LOCK:
        if _FILTER is None:
            _FILTER = _Once()
            for name in _SDK_LOGGERS:
                logging.getLogger(name).addFilter(_FILTER)
        return _FILTER
