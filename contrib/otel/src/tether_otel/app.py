"""The plugin object an application passes to its agents (:class:`OtelPlugin`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import tether

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from tether.registry import ObserverRegistrar

__all__ = ["OtelPlugin"]


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
