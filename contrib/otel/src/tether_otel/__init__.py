"""OpenTelemetry traces and metrics of tether runs (GenAI semantic conventions).

Installed, it registers the ``otel`` event observer, active when configured (see
:mod:`tether_otel.settings`). In an application that manages its own providers, pass
them explicitly instead::

    from tether_otel import OtelPlugin

    agent = tether.Agent(model, plugins=[OtelPlugin(tracer_provider=tp, meter_provider=mp)])

Importing the package imports nothing else: each name is imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import OtelPlugin
    from .observer import MAX_CONTENT, OtelObserver

__all__ = ["MAX_CONTENT", "OtelObserver", "OtelPlugin"]


def __getattr__(name: str) -> Any:
    if name in ("MAX_CONTENT", "OtelObserver"):
        from . import observer

        return getattr(observer, name)
    if name == "OtelPlugin":
        from .app import OtelPlugin

        return OtelPlugin
    raise AttributeError(f"module 'tether_otel' has no attribute {name!r}")
