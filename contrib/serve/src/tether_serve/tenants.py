"""Who is asking: API keys mapped to tenants, and each key's rate and concurrency limits."""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass, field

from .settings import ApiKey

__all__ = ["Caller", "KeyLimits", "authenticate"]

LOCAL = "local"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated request: its tenant and which key (by digest prefix) it used."""

    tenant: str
    key_id: str


def authenticate(keys: list[ApiKey], header: str | None) -> Caller | None:
    """The caller for an ``Authorization: Bearer KEY`` (or bare ``KEY``) header, or
    ``None`` when it matches no key. With no keys configured every caller is ``local``.
    Keys are compared by SHA-256 digest in constant time and never stored or logged."""
    if not keys:
        return Caller(LOCAL, LOCAL)
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    presented = token.strip() if scheme.lower() == "bearer" else header.strip()
    digest = hashlib.sha256(presented.encode()).hexdigest()
    found: Caller | None = None
    for key in keys:
        if hmac.compare_digest(digest, key.sha256):
            found = Caller(key.tenant, key.sha256[:12])
    return found


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float
    running: int = 0


@dataclass(slots=True)
class KeyLimits:
    """A token bucket (``rate_per_minute``, ``burst``) and a running-run count per key."""

    rate_per_minute: float
    burst: int
    max_concurrent: int
    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    def _bucket(self, key_id: str) -> _Bucket:
        bucket = self._buckets.get(key_id)
        if bucket is None:
            bucket = self._buckets[key_id] = _Bucket(float(self.burst), time.monotonic())
        return bucket

    def take(self, key_id: str) -> float | None:
        """Spend one request; ``None`` when allowed, else seconds until one is."""
        bucket = self._bucket(key_id)
        now = time.monotonic()
        rate = self.rate_per_minute / 60.0
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return (1.0 - bucket.tokens) / rate if rate > 0 else 60.0

    def start_run(self, key_id: str) -> bool:
        """Count a run of ``key_id`` as running; ``False`` when at its limit."""
        bucket = self._bucket(key_id)
        if bucket.running >= self.max_concurrent:
            return False
        bucket.running += 1
        return True

    def end_run(self, key_id: str) -> None:
        bucket = self._bucket(key_id)
        bucket.running = max(0, bucket.running - 1)
