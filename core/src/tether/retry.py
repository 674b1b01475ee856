"""How retryable provider errors are retried."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .errors import ProviderError

__all__ = ["RetryPolicy"]


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
