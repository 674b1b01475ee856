"""``RedisSessionStore``: named sessions in Redis, through redis-py's asyncio client.

Session ``NAME`` is a hash ``<prefix>s:{NAME}:meta`` (id, created_at, version,
updated_at, and the writer lease ``lease_owner``/``lease_expires``) and a list
``<prefix>s:{NAME}:messages`` (one JSON message per element); a sorted set
``<prefix>sessions`` indexes names by last write. Every write is one Lua script, which
Redis runs atomically: it checks the version the writer expects (and that the writer
still holds the lease), then pushes the message (or swaps the list) and bumps the
version, or, when another writer got there first, changes nothing and the writer gets
:class:`~tether.errors.SessionConflictError`. Leases are timed by the server's clock
(see :mod:`tether.sessions.versioned`). Records that do not parse are copied to the list
``<prefix>s:{NAME}:quarantine`` before the repaired history replaces them.

A written message is as durable as the server's persistence makes it: with
``appendonly yes`` and ``appendfsync always`` it survives a crash of the server, with
the default ``everysec`` at most the last second can be lost. A worker crash never loses
an acknowledged write.

Every command ends by the run's deadline (or ``timeout_s`` outside a run, which is also
the client's socket timeout); a command cut short drops its connection, and redis-py's
own retries are off (a retried write could run twice). A connection the server closed
(a restart) is replaced before the next command; reads, lease claims and renewals are
retried once on a fresh connection, so the first run after a restart succeeds.

Settings (``[sessions] settings``): ``url`` (``redis://`` or ``rediss://``), or
``url_env``, the environment variable holding it (default ``TETHER_REDIS_URL``;
``redis://127.0.0.1:6379/0`` when neither is set); ``prefix`` for the keys (default
``tether:``); ``timeout_s`` (30) and ``connect_timeout_s`` (10); ``lease_ttl_s`` (30).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from tether.errors import ConfigError, SessionError
from tether.sessions.versioned import (
    DEFAULT_LEASE_TTL_S,
    Lease,
    SessionSummary,
    StoredRecord,
    VersionedStore,
    conflict,
    lease_lost,
)
from tether.sessions.waits import WaitBudget, bounded, wait_budget

__all__ = ["RedisSessionIO", "RedisSessionStore"]

DEFAULT_URL_ENV = "TETHER_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/0"

T = TypeVar("T")

# KEYS: meta, messages, index. ARGV: expected version, now, name, mode, writer ('' for
# none), then the new lines. Returns {1, new_version}, {0, found_version} (-1 when the
# session is gone), or {2, version} when the writer no longer holds the lease.
_WRITE = """
local version = redis.call('HGET', KEYS[1], 'version')
if not version then return {0, -1} end
version = tonumber(version)
if version ~= tonumber(ARGV[1]) then return {0, version} end
if ARGV[5] ~= '' and redis.call('HGET', KEYS[1], 'lease_owner') ~= ARGV[5] then
  return {2, version}
end
if ARGV[4] == 'replace' then
  redis.call('DEL', KEYS[2])
end
for i = 6, #ARGV do
  redis.call('RPUSH', KEYS[2], ARGV[i])
end
redis.call('HSET', KEYS[1], 'version', version + 1, 'updated_at', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return {1, version + 1}
"""

# KEYS: meta, messages, index. ARGV: id, created_at, name.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'id', ARGV[1], 'created_at', ARGV[2], 'version', 0,
             'updated_at', ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
end
return 1
"""

# KEYS: meta, messages, index, quarantine. ARGV: name.
_DELETE = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[4])
redis.call('ZREM', KEYS[3], ARGV[1])
return existed
"""

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

# KEYS: meta, messages, index. ARGV: id, created_at, name, writer, ttl, replacing ('' for
# none). Returns {1, id, created_at, version, lines}, or {0, holder, seconds_left}.
_CLAIM = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'id', ARGV[1], 'created_at', ARGV[2], 'version', 0,
             'updated_at', ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
end
local owner = redis.call('HGET', KEYS[1], 'lease_owner')
local expires = tonumber(redis.call('HGET', KEYS[1], 'lease_expires') or '0')
if owner and owner ~= ARGV[4] and owner ~= ARGV[6] and expires > now then
  return {0, owner, tostring(expires - now)}
end
redis.call('HSET', KEYS[1], 'lease_owner', ARGV[4],
           'lease_expires', tostring(now + tonumber(ARGV[5])))
local f = redis.call('HMGET', KEYS[1], 'id', 'created_at', 'version')
return {1, f[1], f[2], f[3], redis.call('LRANGE', KEYS[2], 0, -1)}
"""
)

# KEYS: meta. ARGV: writer, ttl. Returns 1 if the writer still held the lease.
_RENEW = (
    _NOW
    + """
if redis.call('HGET', KEYS[1], 'lease_owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'lease_expires', tostring(now + tonumber(ARGV[2])))
return 1
"""
)

# KEYS: meta. ARGV: writer.
_RELEASE = """
if redis.call('HGET', KEYS[1], 'lease_owner') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'lease_owner', 'lease_expires')
end
return 1
"""

_SCRIPTS = {
    "write": _WRITE,
    "create": _CREATE,
    "delete": _DELETE,
    "claim": _CLAIM,
    "renew": _RENEW,
    "release": _RELEASE,
}


class RedisSessionIO:
    """The :class:`~tether.sessions.versioned.SessionIO` of a Redis server."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "tether:",
        timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9:_.\-]{0,64}", prefix):
            raise ConfigError(
                "[sessions] settings.prefix may hold letters, digits, ':', '_', '.', '-' "
                f"(at most 64), not {prefix!r}."
            )
        if not (timeout_s > 0 and connect_timeout_s > 0):
            raise ConfigError(
                "[sessions] settings.timeout_s and connect_timeout_s must be positive seconds, "
                f"got {timeout_s!r} and {connect_timeout_s!r}."
            )
        self._url = url
        self.prefix = prefix
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self._client: Any = None
        self._scripts: dict[str, Any] = {}

    def __repr__(self) -> str:  # never show the URL (it may hold a password)
        return f"<RedisSessionIO prefix={self.prefix!r}>"

    def keys(self, name: str) -> list[str]:
        """The meta hash, the message list and the index of session ``name``."""
        base = f"{self.prefix}s:{{{name}}}"
        return [f"{base}:meta", f"{base}:messages", f"{self.prefix}sessions"]

    def quarantine_key(self, name: str) -> str:
        """The list holding session ``name``'s records that did not parse."""
        return f"{self.prefix}s:{{{name}}}:quarantine"

    def _connect(self) -> Any:
        if self._client is None:
            import redis.asyncio as redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            self._client = redis.Redis.from_url(
                self._url,
                decode_responses=True,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.connect_timeout_s,
                retry=Retry(NoBackoff(), 0),
            )
            for name, source in _SCRIPTS.items():
                self._scripts[name] = self._client.register_script(source)
        return self._client

    async def _op(
        self, what: str, work: Callable[[Any], Coroutine[Any, Any, T]], *, idempotent: bool
    ) -> T:
        """Run ``work(client)`` within the operation's budget; an ``idempotent`` one is
        tried once more on a fresh connection if the server had closed the first.

        :raises SessionTimeoutError: the budget ran out.
        :raises SessionError: the store failed.
        """
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import RedisError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        client = self._connect()
        budget = wait_budget(self.timeout_s)
        until = time.monotonic() + budget.seconds
        for number in (1, 2):
            left = WaitBudget(max(until - time.monotonic(), 0.0), budget.by_run)
            try:
                return await bounded(work(client), left, store="redis", what=what)
            except RedisTimeoutError:
                raise left.error("redis", what) from None
            except RedisConnectionError as exc:
                if number == 1 and idempotent:
                    continue
                raise _failed(exc, what) from None
            except RedisError as exc:
                raise _failed(exc, what) from None
        raise AssertionError("unreachable")

    # -- SessionIO ------------------------------------------------------------------------
    async def load(self, name: str) -> StoredRecord | None:
        meta, messages, _ = self.keys(name)

        async def work(client: Any) -> tuple[dict[str, str], list[str]]:
            async with client.pipeline(transaction=True) as pipe:
                pipe.hgetall(meta)
                pipe.lrange(messages, 0, -1)
                fields, lines = await pipe.execute()
            return fields, lines

        fields, lines = await self._op("loading the session", work, idempotent=True)
        if not fields:
            return None
        return StoredRecord(
            fields["id"], float(fields["created_at"]), int(fields["version"]), list(lines)
        )

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        async def work(client: Any) -> None:
            await self._scripts["create"](keys=self.keys(name), args=[session_id, created_at, name])

        await self._op("creating the session", work, idempotent=True)
        record = await self.load(name)
        if record is None:  # deleted in between
            raise conflict(name, 0, None)
        return record

    async def claim(
        self,
        name: str,
        writer: str,
        ttl: float,
        session_id: str,
        created_at: float,
        replacing: str | None = None,
    ) -> StoredRecord | Lease:
        async def work(client: Any) -> list[Any]:
            result: list[Any] = await self._scripts["claim"](
                keys=self.keys(name),
                args=[session_id, created_at, name, writer, ttl, replacing or ""],
            )
            return result

        result = await self._op("claiming the session", work, idempotent=True)
        if result[0] == 0:
            return Lease(str(result[1]), float(result[2]))
        _, session_id, created, version, lines = result
        return StoredRecord(str(session_id), float(created), int(version), list(lines))

    async def renew(self, name: str, writer: str, ttl: float) -> bool:
        async def work(client: Any) -> bool:
            return bool(await self._scripts["renew"](keys=self.keys(name)[:1], args=[writer, ttl]))

        return await self._op("renewing the lease", work, idempotent=True)

    async def release(self, name: str, writer: str) -> None:
        async def work(client: Any) -> None:
            await self._scripts["release"](keys=self.keys(name)[:1], args=[writer])

        await self._op("releasing the lease", work, idempotent=True)

    async def _write(
        self, name: str, expected: int, mode: str, lines: Sequence[str], writer: str | None
    ) -> int:
        async def work(client: Any) -> list[Any]:
            result: list[Any] = await self._scripts["write"](
                keys=self.keys(name),
                args=[expected, time.time(), name, mode, writer or "", *lines],
            )
            return result

        what = "appending a message" if mode == "append" else "replacing the history"
        status, version = await self._op(what, work, idempotent=False)
        if status == 2:
            raise lease_lost(name, expected)
        if not status:
            raise conflict(name, expected, None if version < 0 else int(version))
        return int(version)

    async def append(
        self, name: str, expected: int, position: int, line: str, writer: str | None = None
    ) -> int:
        return await self._write(name, expected, "append", [line], writer)

    async def replace(
        self, name: str, expected: int, lines: Sequence[str], writer: str | None = None
    ) -> int:
        return await self._write(name, expected, "replace", lines, writer)

    async def quarantine(self, name: str, entries: Sequence[tuple[int, str]]) -> None:
        async def work(client: Any) -> None:
            await client.rpush(self.quarantine_key(name), *(body for _, body in entries))

        await self._op("quarantining records", work, idempotent=False)

    async def quarantined(self, name: str) -> list[str]:
        async def work(client: Any) -> list[str]:
            return list(await client.lrange(self.quarantine_key(name), 0, -1))

        return await self._op("reading the quarantine", work, idempotent=True)

    async def summaries(self) -> list[SessionSummary]:
        async def work(client: Any) -> list[SessionSummary]:
            entries = await client.zrange(f"{self.prefix}sessions", 0, -1, withscores=True)
            async with client.pipeline(transaction=False) as pipe:
                for name, _ in entries:
                    pipe.llen(self.keys(name)[1])
                counts = await pipe.execute()
            return [
                SessionSummary(name, int(count), datetime.fromtimestamp(score, tz=UTC))
                for (name, score), count in zip(entries, counts, strict=True)
            ]

        return await self._op("listing sessions", work, idempotent=True)

    async def delete(self, name: str) -> bool:
        async def work(client: Any) -> bool:
            keys = [*self.keys(name), self.quarantine_key(name)]
            return bool(await self._scripts["delete"](keys=keys, args=[name]))

        return await self._op("deleting the session", work, idempotent=False)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


class RedisSessionStore(VersionedStore):
    """The ``redis`` session store; see the module docstring for its settings."""

    kind = "redis"

    def __init__(
        self,
        url: str | None = None,
        *,
        url_env: str | None = None,
        prefix: str = "tether:",
        timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        lease_wait_s: float = 0.0,
        data_dir: str | None = None,
    ) -> None:
        resolved = url or os.environ.get(url_env or DEFAULT_URL_ENV) or DEFAULT_URL
        super().__init__(
            RedisSessionIO(
                resolved, prefix=prefix, timeout_s=timeout_s, connect_timeout_s=connect_timeout_s
            ),
            lease_ttl_s=lease_ttl_s,
            lease_wait_s=lease_wait_s,
        )

    def __repr__(self) -> str:
        io = self.io
        assert isinstance(io, RedisSessionIO)
        return f"<RedisSessionStore prefix={io.prefix!r}>"


def _failed(exc: BaseException, what: str) -> SessionError:
    return SessionError(
        f"The Redis session store failed while {what}: {type(exc).__name__}: "
        f"{_describe(exc)}. Check that the server is running and [sessions] settings.url is "
        "right."
    )


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return re.sub(r"(rediss?://)\S+", r"\1...", text)
