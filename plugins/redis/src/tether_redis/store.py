"""``RedisSessionStore``: named sessions in Redis, through redis-py's asyncio client.

Session ``NAME`` is a hash ``<prefix>s:{NAME}:meta`` (id, created_at, version,
updated_at) and a list ``<prefix>s:{NAME}:messages`` (one JSON message per element); a
sorted set ``<prefix>sessions`` indexes names by last write. Every write is one Lua
script, which Redis runs atomically: it checks the version the writer expects, then
pushes the message (or swaps the list) and bumps the version, or, when another writer
got there first, changes nothing and the writer gets
:class:`~tether.errors.SessionConflictError`.

A written message is as durable as the server's persistence makes it: with
``appendonly yes`` and ``appendfsync always`` it survives a crash of the server, with
the default ``everysec`` at most the last second can be lost. A worker crash never loses
an acknowledged write.

Settings (``[sessions] settings``): ``url`` (``redis://`` or ``rediss://``), or
``url_env``, the environment variable holding it (default ``TETHER_REDIS_URL``;
``redis://127.0.0.1:6379/0`` when neither is set); ``prefix`` for the keys (default
``tether:``).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

from tether.errors import ConfigError, SessionError
from tether.sessions.versioned import SessionSummary, StoredRecord, VersionedStore, conflict

__all__ = ["RedisSessionIO", "RedisSessionStore"]

DEFAULT_URL_ENV = "TETHER_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/0"

# KEYS: meta, messages, index. ARGV: expected version, now, name, then the new lines.
# Returns {1, new_version}, or {0, found_version} (-1 when the session is gone).
_WRITE = """
local version = redis.call('HGET', KEYS[1], 'version')
if not version then return {0, -1} end
version = tonumber(version)
if version ~= tonumber(ARGV[1]) then return {0, version} end
if ARGV[4] == 'replace' then
  redis.call('DEL', KEYS[2])
end
for i = 5, #ARGV do
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

# KEYS: meta, messages, index. ARGV: name.
_DELETE = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return existed
"""


class RedisSessionIO:
    """The :class:`~tether.sessions.versioned.SessionIO` of a Redis server."""

    def __init__(self, url: str, *, prefix: str = "tether:") -> None:
        if not re.fullmatch(r"[A-Za-z0-9:_.\-]{0,64}", prefix):
            raise ConfigError(
                "[sessions] settings.prefix may hold letters, digits, ':', '_', '.', '-' "
                f"(at most 64), not {prefix!r}."
            )
        self._url = url
        self.prefix = prefix
        self._client: Any = None
        self._scripts: dict[str, Any] = {}

    def __repr__(self) -> str:  # never show the URL (it may hold a password)
        return f"<RedisSessionIO prefix={self.prefix!r}>"

    def keys(self, name: str) -> list[str]:
        """The meta hash, the message list and the index of session ``name``."""
        base = f"{self.prefix}s:{{{name}}}"
        return [f"{base}:meta", f"{base}:messages", f"{self.prefix}sessions"]

    @contextlib.asynccontextmanager
    async def _redis(self) -> AsyncIterator[Any]:
        """The client; driver errors leave as :class:`SessionError`."""
        import redis.asyncio as redis
        from redis.exceptions import RedisError

        if self._client is None:
            self._client = redis.Redis.from_url(self._url, decode_responses=True)
            for name, source in (("write", _WRITE), ("create", _CREATE), ("delete", _DELETE)):
                self._scripts[name] = self._client.register_script(source)
        try:
            yield self._client
        except RedisError as exc:
            raise SessionError(
                f"The Redis session store failed: {type(exc).__name__}: {_describe(exc)}. Check "
                "that the server is running and [sessions] settings.url is right."
            ) from None

    # -- SessionIO ------------------------------------------------------------------------
    async def load(self, name: str) -> StoredRecord | None:
        meta, messages, _ = self.keys(name)
        async with self._redis() as client, client.pipeline(transaction=True) as pipe:
            pipe.hgetall(meta)
            pipe.lrange(messages, 0, -1)
            fields, lines = await pipe.execute()
        if not fields:
            return None
        return StoredRecord(
            fields["id"], float(fields["created_at"]), int(fields["version"]), list(lines)
        )

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        async with self._redis():
            await self._scripts["create"](keys=self.keys(name), args=[session_id, created_at, name])
        record = await self.load(name)
        if record is None:  # deleted in between
            raise conflict(name, 0, None)
        return record

    async def _write(self, name: str, expected: int, mode: str, lines: Sequence[str]) -> int:
        async with self._redis():
            ok, version = await self._scripts["write"](
                keys=self.keys(name), args=[expected, time.time(), name, mode, *lines]
            )
        if not ok:
            raise conflict(name, expected, None if version < 0 else int(version))
        return int(version)

    async def append(self, name: str, expected: int, position: int, line: str) -> int:
        return await self._write(name, expected, "append", [line])

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int:
        return await self._write(name, expected, "replace", lines)

    async def summaries(self) -> list[SessionSummary]:
        async with self._redis() as client:
            entries = await client.zrange(f"{self.prefix}sessions", 0, -1, withscores=True)
            async with client.pipeline(transaction=False) as pipe:
                for name, _ in entries:
                    pipe.llen(self.keys(name)[1])
                counts = await pipe.execute()
        return [
            SessionSummary(name, int(count), datetime.fromtimestamp(score, tz=UTC))
            for (name, score), count in zip(entries, counts, strict=True)
        ]

    async def delete(self, name: str) -> bool:
        async with self._redis():
            existed = await self._scripts["delete"](keys=self.keys(name), args=[name])
        return bool(existed)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class RedisSessionStore(VersionedStore):
    """The ``redis`` session store; see the module docstring for its settings."""

    kind = "redis"

    def __init__(
        self,
        url: str | None = None,
        *,
        url_env: str | None = None,
        prefix: str = "tether:",
        data_dir: str | None = None,
    ) -> None:
        resolved = url or os.environ.get(url_env or DEFAULT_URL_ENV) or DEFAULT_URL
        super().__init__(RedisSessionIO(resolved, prefix=prefix))

    def __repr__(self) -> str:
        io = self.io
        assert isinstance(io, RedisSessionIO)
        return f"<RedisSessionStore prefix={io.prefix!r}>"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return re.sub(r"(rediss?://)\S+", r"\1...", text)
