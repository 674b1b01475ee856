"""How retryable provider errors are retried."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from .errors import ProviderError

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(slots=True)
class RetryPolicy:
    """How retryable provider errors are retried.

    Delays grow exponentially from ``base_delay`` with full jitter, capped at
    ``max_delay``. A provider's ``retry_after`` hint is honoured as given (it is the
    provider telling us when it will accept the request) unless it exceeds
    ``max_retry_after``, in which case the error is raised. ``sleep`` is injectable so
    tests need not wait.
    """

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds to wait before try ``attempt + 1``, or None to give up."""
        if attempt >= self.max_attempts:
            return None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return float(retry_after) if retry_after <= self.max_retry_after else None
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait according to HTTP response headers, for provider plugins.

    ``retry-after-ms`` (milliseconds) wins over ``retry-after``, which may be seconds or
    an HTTP date. Returns ``None`` when neither header is present and usable; never a
    negative number.
    """
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
