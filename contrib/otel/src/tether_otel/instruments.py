"""The metrics tether-otel records.

- ``gen_ai.client.token.usage`` (histogram, ``{token}``): per model call, once with
  ``gen_ai.token.type = input`` and once with ``output`` (GenAI semantic conventions);
- ``gen_ai.client.operation.duration`` (histogram, ``s``): per model call (``chat``) and
  per run (``invoke_agent``), with ``error.type`` when it failed;
- ``tether.tool.calls`` and ``tether.tool.errors`` (counters, ``{call}``), by
  ``gen_ai.tool.name`` and ``tether.tool.outcome``;
- ``tether.cache.hit_ratio`` (histogram, ``1``): per run that reported input tokens, the
  share read from the prompt cache.

Recording a histogram value through the SDK costs about as much CPU as a harness round
trip (the attributes are copied and hashed on every call), so the run's thread only
queues each value; they are recorded, in order and with the context they were taken in,
when the metrics are next collected (the callback of the tool-call counters, which the
SDK calls before it reads the histograms), or whenever 4096 are waiting. The tool-call
counts are plain integers, reported at collection by those observable counters. Every
observer of one meter provider shares one :class:`Instruments`.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.context import get_current
from opentelemetry.metrics import CallbackOptions, Observation

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import Histogram, Meter, MeterProvider

__all__ = ["PENDING_LIMIT", "Instruments"]

PENDING_LIMIT = 4096
"""Histogram values queued before they are recorded without waiting for a collection."""

_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
_SECONDS_BUCKETS = [
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
]
_RATIO_BUCKETS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


_SHARED: weakref.WeakKeyDictionary[Any, Instruments] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


class Instruments:
    """tether-otel's instruments on one meter provider (see the module docs)."""

    def __init__(self, meter: Meter) -> None:
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used per model call, by token type.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of model calls and agent runs.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.cache_hit_ratio = meter.create_histogram(
            "tether.cache.hit_ratio",
            unit="1",
            description="Share of a run's input tokens read from the prompt cache.",
            explicit_bucket_boundaries_advisory=_RATIO_BUCKETS,
        )
        self._pending: deque[tuple[Histogram, float, Mapping[str, Any], Context]] = deque()
        self._tool_calls: dict[tuple[str, str], int] = {}
        self._labels: dict[tuple[str, str], dict[str, str]] = {}
        self._lock = threading.Lock()
        meter.create_observable_counter(
            "tether.tool.calls",
            callbacks=[self._observe_calls],
            unit="{call}",
            description="Tool calls, by tool and outcome.",
        )
        meter.create_observable_counter(
            "tether.tool.errors",
            callbacks=[self._observe_errors],
            unit="{call}",
            description="Tool calls that failed or were interrupted, by tool.",
        )

    @classmethod
    def create(cls, provider: MeterProvider, version: str) -> Instruments:
        """The instruments of ``provider``, made on first use."""
        with _SHARED_LOCK:
            try:
                instruments = _SHARED.get(provider)
            except TypeError:  # a provider that cannot be weakly referenced or hashed
                return cls(provider.get_meter("tether_otel", version))
            if instruments is None:
                instruments = _SHARED[provider] = cls(provider.get_meter("tether_otel", version))
            return instruments

    def record(self, histogram: Histogram, value: float, attributes: Mapping[str, Any]) -> None:
        """Queue ``value`` for ``histogram`` (recorded at the next collection)."""
        pending = self._pending
        pending.append((histogram, value, attributes, get_current()))
        if len(pending) >= PENDING_LIMIT:
            self.flush()

    def flush(self) -> None:
        """Record every queued value (safe from any thread)."""
        pending = self._pending
        while True:
            try:
                histogram, value, attributes, context = pending.popleft()
            except IndexError:
                return
            histogram.record(value, attributes, context)

    def count_tool_calls(self, name: str, outcome: str, count: int) -> None:
        key = (name, outcome)
        with self._lock:
            self._tool_calls[key] = self._tool_calls.get(key, 0) + count
            if key not in self._labels:
                self._labels[key] = {"gen_ai.tool.name": name, "tether.tool.outcome": outcome}

    def _counts(self, errors_only: bool) -> list[Observation]:
        with self._lock:
            return [
                Observation(count, self._labels[key])
                for key, count in self._tool_calls.items()
                if not errors_only or key[1] != "ok"
            ]

    def _observe_calls(self, options: CallbackOptions) -> Iterable[Observation]:
        self.flush()  # the SDK calls this before it reads the histograms
        return self._counts(errors_only=False)

    def _observe_errors(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._counts(errors_only=True)
