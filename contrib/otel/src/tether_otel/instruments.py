"""The metrics tether-otel records.

- ``gen_ai.client.token.usage`` (histogram, ``{token}``): per model call, once with
  ``gen_ai.token.type = input`` and once with ``output`` (GenAI semantic conventions);
- ``gen_ai.client.operation.duration`` (histogram, ``s``): per model call (``chat``) and
  per run (``invoke_agent``), with ``error.type`` when it failed;
- ``tether.tool.calls`` and ``tether.tool.errors`` (counters, ``{call}``), by
  ``gen_ai.tool.name`` and ``tether.tool.outcome``;
- ``tether.cache.hit_ratio`` (histogram, ``1``): per run that reported input tokens, the
  share read from the prompt cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider

__all__ = ["Instruments"]

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


@dataclass(slots=True)
class Instruments:
    token_usage: Histogram
    duration: Histogram
    tool_calls: Counter
    tool_errors: Counter
    cache_hit_ratio: Histogram

    @classmethod
    def create(cls, provider: MeterProvider, version: str) -> Instruments:
        meter = provider.get_meter("tether_otel", version)
        return cls(
            token_usage=meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Tokens used per model call, by token type.",
                explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
            ),
            duration=meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="Duration of model calls and agent runs.",
                explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
            ),
            tool_calls=meter.create_counter(
                "tether.tool.calls", unit="{call}", description="Tool calls, by tool and outcome."
            ),
            tool_errors=meter.create_counter(
                "tether.tool.errors",
                unit="{call}",
                description="Tool calls that failed or were interrupted, by tool.",
            ),
            cache_hit_ratio=meter.create_histogram(
                "tether.cache.hit_ratio",
                unit="1",
                description="Share of a run's input tokens read from the prompt cache.",
                explicit_bucket_boundaries_advisory=_RATIO_BUCKETS,
            ),
        )
