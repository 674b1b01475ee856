"""The ``otel`` entry point: an event observer built from ``[observers.otel]``.

Loading it imports no part of OpenTelemetry; that happens when an agent's configuration
makes the observer active."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import tether
from tether.config import Config
from tether.registry import ObserverRegistrar

from .settings import OtelSettings, parse_settings

if TYPE_CHECKING:
    from .observer import OtelObserver

__all__ = ["observer_for", "register_observers", "shutdown"]

_OBSERVERS: dict[OtelSettings, OtelObserver] = {}
_LOCK = threading.Lock()
_HTTPX: list[Any] = []
"""The httpx instrumentor, once this plugin instrumented httpx."""


def observer_for(settings: Mapping[str, Any], config: Config) -> OtelObserver | None:
    """The observer for these settings, shared by every agent that has them (so a run
    started by a tool nests under that tool's span), or ``None`` when inactive."""
    parsed = parse_settings(settings)
    if not parsed.active():
        return None
    with _LOCK:
        observer = _OBSERVERS.get(parsed)
        if observer is None:
            from .observer import OtelObserver
            from .providers import providers_for

            tracer_provider, meter_provider = providers_for(parsed)
            if parsed.instrument_httpx:
                _instrument_httpx(tracer_provider, meter_provider)
            observer = _OBSERVERS[parsed] = OtelObserver(
                tracer_provider, meter_provider, capture_content=parsed.content
            )
        return observer


def shutdown() -> None:
    """Flush and shut down every provider built from configuration, and forget the
    observers using them (the next agent builds new ones). For tests, and applications
    that reconfigure telemetry at run time; at exit the SDK flushes on its own."""
    from .providers import forget_all

    with _LOCK:
        _OBSERVERS.clear()
        forget_all()
        while _HTTPX:
            _HTTPX.pop().uninstrument()


def _instrument_httpx(tracer_provider: Any, meter_provider: Any) -> None:
    try:
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    except ImportError as exc:
        raise tether.errors.ConfigError(
            "[observers.otel] instrument_httpx = true needs the httpx instrumentation: "
            "uv pip install './contrib/otel[httpx]'."
        ) from exc
    instrumentor = HTTPXClientInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        _HTTPX.append(instrumentor)


@tether.hookimpl
def register_observers(observers: ObserverRegistrar) -> None:
    observers.add("otel", observer_for, configure=True)
