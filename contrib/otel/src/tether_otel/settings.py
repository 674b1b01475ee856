"""``[observers.otel]`` settings, and when the plugin is active at all.

Installing tether-otel exports nothing by itself; it becomes active when

- the section sets ``enabled = true`` or any other key, or
- a standard variable names where to export (``OTEL_EXPORTER_OTLP_ENDPOINT``,
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_TRACES_EXPORTER`` other than ``none``), or
- the application already installed an OpenTelemetry SDK tracer provider globally (then
  tether's spans join the application's traces);

and never when ``OTEL_SDK_DISABLED=true`` or ``enabled = false``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.errors import ConfigError

__all__ = ["EXPORTERS", "OtelSettings", "parse_settings"]

EXPORTERS = ("auto", "otlp", "console", "global")

_KEYS: dict[str, type | tuple[type, ...]] = {
    "enabled": bool,
    "exporter": str,
    "endpoint": str,
    "service_name": str,
    "capture_content": bool,
    "metrics": bool,
    "metric_interval_s": (int, float),
    "instrument_httpx": bool,
}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class OtelSettings:
    """Parsed ``[observers.otel]``.

    :param exporter: ``auto`` (the application's global providers if it set SDK ones,
        else OTLP), ``otlp`` (OTLP over HTTP/protobuf to ``endpoint`` or the
        ``OTEL_EXPORTER_OTLP_*`` variables), ``console`` (print spans, for debugging),
        ``global`` (always the application's global providers).
    :param capture_content: record prompts, answers, tool arguments and results (scrubbed
        of secrets) on spans. Off by default; ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
        turns it on too.
    :param instrument_httpx: instrument httpx (needs ``tether-otel[httpx]``), so HTTP
        requests made by tools carry the trace context of their ``execute_tool`` span.
    """

    enabled: bool | None = None
    exporter: str = "auto"
    endpoint: str | None = None
    service_name: str | None = None
    capture_content: bool = False
    metrics: bool = True
    metric_interval_s: float | None = None
    instrument_httpx: bool = False
    explicit: bool = False
    """The section set something (so the plugin is wanted even without OTEL_* variables)."""

    def active(self) -> bool:
        """Whether to trace at all (see the module docstring)."""
        if self.enabled is False or _truthy(os.environ.get("OTEL_SDK_DISABLED")):
            return False
        if self.explicit:
            return True
        traces = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        ):
            return traces != "none"
        if traces and traces != "none":
            return True
        return _global_sdk_provider()

    @property
    def content(self) -> bool:
        return self.capture_content or _truthy(
            os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        )


def _global_sdk_provider() -> bool:
    import sys

    if "opentelemetry.sdk.trace" not in sys.modules:  # nobody set one up: import nothing
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    return isinstance(trace.get_tracer_provider(), TracerProvider)


def parse_settings(settings: Mapping[str, Any]) -> OtelSettings:
    """Validate ``[observers.otel]``; a wrong key or type is a :class:`ConfigError`."""
    values = dict(settings)
    unknown = sorted(set(values) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"[observers.otel]: unknown key {', '.join(map(repr, unknown))}. "
            f"Valid keys: {', '.join(sorted(_KEYS))}."
        )
    for key, value in values.items():
        expected = _KEYS[key]
        if (isinstance(value, bool) and expected is not bool) or not isinstance(value, expected):
            names = expected.__name__ if isinstance(expected, type) else "number"
            raise ConfigError(f"[observers.otel]: {key} must be a {names}, not {value!r}.")
    exporter = values.get("exporter", "auto")
    if exporter not in EXPORTERS:
        raise ConfigError(
            f'[observers.otel]: exporter = "{exporter}" is not one of {", ".join(EXPORTERS)}.'
        )
    explicit = bool(values) and values.get("enabled") is not False
    return OtelSettings(
        enabled=values.get("enabled"),
        exporter=exporter,
        endpoint=values.get("endpoint"),
        service_name=values.get("service_name"),
        capture_content=values.get("capture_content", False),
        metrics=values.get("metrics", True),
        metric_interval_s=values.get("metric_interval_s"),
        instrument_httpx=values.get("instrument_httpx", False),
        explicit=explicit,
    )
