"""The metrics tether-otel records, on the OpenTelemetry metrics API.

- ``gen_ai.client.token.usage`` (histogram, ``{token}``): per model call, once with
  ``gen_ai.token.type = input`` and once with ``output`` (GenAI semantic conventions);
- ``gen_ai.client.operation.duration`` (histogram, ``s``): per model call (``chat``) and
  per run (``invoke_agent``), with ``error.type`` when it failed;
- ``tether.tool.calls`` and ``tether.tool.errors`` (counters, ``{call}``), by
  ``gen_ai.tool.name`` and ``tether.tool.outcome``, counted as each call ends;
- ``tether.cache.hit_ratio`` (histogram, ``1``): per run that reported input tokens, the
  share read from the prompt cache.

Values are recorded as they happen, in the context of the run (so an SDK samples
exemplars from the application's current span). Every observer of one meter provider
shares one :class:`Instruments` (creating an instrument twice makes the SDK warn).
"""

from __future__ import annotations

import threading
import weakref
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from . import semconv

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

__all__ = ["Instruments"]

_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
_SECONDS_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24]
_SECONDS_BUCKETS += [20.48, 40.96, 81.92]
_RATIO_BUCKETS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]

_SHARED: weakref.WeakKeyDictionary[Any, Instruments] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


class Instruments:
    """tether-otel's instruments on one meter provider (see the module docs)."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(
            "tether_otel", version("tether-otel"), schema_url=semconv.SCHEMA_URL
        )
        self.token_usage = meter.create_histogram(
            semconv.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Tokens used per model call, by token type.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            semconv.METRIC_OPERATION_DURATION,
            unit="s",
            description="Duration of model calls and agent runs.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.cache_hit_ratio = meter.create_histogram(
            semconv.METRIC_CACHE_HIT_RATIO,
            unit="1",
            description="Share of a run's input tokens read from the prompt cache.",
            explicit_bucket_boundaries_advisory=_RATIO_BUCKETS,
        )
        self.tool_calls = meter.create_counter(
            semconv.METRIC_TOOL_CALLS, unit="{call}", description="Tool calls, by tool and outcome."
        )
        self.tool_errors = meter.create_counter(
            semconv.METRIC_TOOL_ERRORS,
            unit="{call}",
            description="Tool calls that failed or were interrupted, by tool.",
        )

    @classmethod
    def of(cls, provider: MeterProvider) -> Instruments:
        """The instruments of ``provider``, made on first use."""
        with _SHARED_LOCK:
            try:
                instruments = _SHARED.get(provider)
            except TypeError:  # a provider that cannot be weakly referenced or hashed
                return cls(provider)
            if instruments is None:
                instruments = _SHARED[provider] = cls(provider)
            return instruments

    def count_tool_call(self, name: str, outcome: str) -> None:
        """One call of the tool ``name`` ended with ``outcome`` (``ok``, ``error``,
        ``interrupted``)."""
        attributes = {semconv.TOOL_NAME: name, semconv.TOOL_OUTCOME: outcome}
        self.tool_calls.add(1, attributes)
        if outcome != "ok":
            self.tool_errors.add(1, attributes)
