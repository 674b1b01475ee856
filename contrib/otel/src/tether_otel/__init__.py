"""OpenTelemetry traces and metrics of tether runs (GenAI semantic conventions).

Installed, it registers the ``otel`` event observer, active when configured (see
:mod:`tether_otel.settings`). In an application that manages its own providers, pass
them explicitly instead::

    from tether_otel import OtelPlugin

    agent = tether.Agent(model, plugins=[OtelPlugin(tracer_provider=tp, meter_provider=mp)])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tether
from tether.registry import ObserverRegistrar

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from .observer import MAX_CONTENT, OtelObserver

__all__ = ["MAX_CONTENT", "OtelObserver", "OtelPlugin"]


def __getattr__(name: str) -> Any:
    if name in ("MAX_CONTENT", "OtelObserver"):
        from . import observer

        return getattr(observer, name)
    raise AttributeError(f"module 'tether_otel' has no attribute {name!r}")


class OtelPlugin:
    """A plugin object for ``Agent(plugins=[...])`` that traces to the given providers
    (the global ones when omitted). Give the same instance to every agent whose runs
    should nest (a sub-agent's run under the tool call that started it).

    :param name: the observer's registered name (``[observers.<name>] enabled = false``
        turns it off).
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        name: str = "otel-app",
    ) -> None:
        from .observer import OtelObserver

        self.name = name
        self.observer = OtelObserver(
            tracer_provider, meter_provider, capture_content=capture_content
        )

    @tether.hookimpl
    def register_observers(self, observers: ObserverRegistrar) -> None:
        observers.add(self.name, self.observer)
