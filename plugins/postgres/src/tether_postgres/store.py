"""``PostgresSessionStore``: named sessions in PostgreSQL tables, through psycopg 3's
asyncio API and a connection pool.

Every write moves the session's version from the one the writer expects to the next
(``UPDATE ... WHERE version = %s``, which row-locks the session, so concurrent writers
queue and all but the first find the version moved) and writes the message rows in the
same transaction; a writer that finds another version, or whose lease another writer has
taken over, gets :class:`~tether.errors.SessionConflictError` and nothing is written. An
append is one round trip: one statement (the version bump and the insert in a
data-modifying CTE, the insert only if the bump happened) sent in pipeline mode together
with its timeouts. A committed append survives a crash of the worker and, with
PostgreSQL's default ``synchronous_commit``, of the database server.

Writers hold a lease (``lease_owner``, ``lease_expires`` by the server's clock; see
:mod:`tether.sessions.versioned`); records that do not parse are copied to
``tether_session_quarantine`` before the repaired history replaces them.

Every wait ends by the run's deadline (or ``timeout_s`` outside a run): waiting for a
pooled connection, connecting (``connect_timeout_s``), and every statement, whose
``statement_timeout`` and ``lock_timeout`` are set from the time left, so a row lock held
by another client ends in :class:`~tether.errors.SessionTimeoutError` and the server
gives the lock wait up too. When time runs out or the run is cancelled, the connection
is dropped without a word to the server (a stalled server is never waited on to roll
back; it aborts the transaction when the connection goes). A connection the server
closed (a restart, ``pg_terminate_backend``) is replaced and the operation retried when
nothing of it can have been committed, so the first run after a restart succeeds.

Settings (``[sessions] settings``):

- ``dsn``: a libpq connection string or URL; or ``dsn_env``, the environment variable
  holding it (default ``TETHER_POSTGRES_DSN``). Put passwords in the environment or in
  ``~/.pgpass``, not in ``tether.toml``; they never appear in errors or logs.
- ``schema``: where the tables live (default ``public``); created if missing.
- ``min_connections``/``max_connections``: the pool size per process (1 and 10).
- ``timeout_s``: the longest one operation may take outside a run's deadline (30);
  ``connect_timeout_s``: the longest a new connection may take (10).
- ``lease_ttl_s``: how long a writer's lease lasts without renewal (30).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

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

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresSessionIO", "PostgresSessionStore", "resolve_dsn"]

DEFAULT_DSN_ENV = "TETHER_POSTGRES_DSN"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_ATTEMPTS = 3
"""Tries of one operation when the server closed the connection before it committed."""

T = TypeVar("T")


def resolve_dsn(dsn: str | None, dsn_env: str | None, *, what: str = "[sessions] settings") -> str:
    """The connection string from ``dsn`` or the environment variable ``dsn_env``.

    :raises ConfigError: neither is set (the message never contains a connection string).
    """
    if dsn:
        return dsn
    variable = dsn_env or DEFAULT_DSN_ENV
    value = os.environ.get(variable)
    if value:
        return value
    raise ConfigError(
        f"No PostgreSQL connection string: set {what} dsn, or the {variable} environment "
        'variable (e.g. "postgresql://user@host:5432/dbname").'
    )


class _Broken(Exception):
    """The connection broke; ``retry`` is true when nothing can have been committed."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


@dataclass(slots=True)
class _Attempt:
    """One try of an operation: the connection it holds, and whether it sent a commit."""

    conn: AsyncConnection[Any] | None = None
    committing: bool = False
    until: float = 0.0
    """When the operation's budget ends (``time.monotonic()``)."""

    async def timeouts(self, conn: AsyncConnection[Any]) -> None:
        """Send the statement and lock timeouts of the time left (see :func:`_set_timeouts`);
        in pipeline mode, this adds no round trip of its own."""
        await _set_timeouts(conn, max(self.until - time.monotonic(), 0.0))

    async def abort(self) -> None:
        """Drop the connection without a word to the server (it may be stalled)."""
        if self.conn is not None:
            await self.conn.close()


Work = Callable[["AsyncConnection[Any]", _Attempt], Awaitable[T]]


class PostgresSessionIO:
    """The :class:`~tether.sessions.versioned.SessionIO` of PostgreSQL tables."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "public",
        min_connections: int = 1,
        max_connections: int = 10,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        if not _IDENTIFIER.fullmatch(schema):
            raise ConfigError(
                f"[sessions] settings.schema must be a plain SQL identifier, not {schema!r}."
            )
        if not 1 <= min_connections <= max_connections:
            raise ConfigError(
                "[sessions] settings need 1 <= min_connections <= max_connections, "
                f"got {min_connections} and {max_connections}."
            )
        if not (timeout_s > 0 and connect_timeout_s > 0):
            raise ConfigError(
                "[sessions] settings.timeout_s and connect_timeout_s must be positive seconds, "
                f"got {timeout_s!r} and {connect_timeout_s!r}."
            )
        self._dsn = dsn
        self.schema = schema
        self.min_connections = min_connections
        self.max_connections = max_connections
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self._pool: AsyncConnectionPool[Any] | None = None
        self.sessions = f'"{schema}".tether_sessions'
        self.messages = f'"{schema}".tether_session_messages'
        self.quarantine_table = f'"{schema}".tether_session_quarantine'

    def __repr__(self) -> str:  # never show the connection string
        return f"<PostgresSessionIO schema={self.schema}>"

    # -- connections ----------------------------------------------------------------------
    def _connect_timeout(self, seconds: float) -> int:
        # libpq takes whole seconds (and treats less than 2 as 2); the caller's own
        # deadline cuts a connect short anyway.
        return max(2, int(min(self.connect_timeout_s, max(seconds, 0.0)) + 0.999))

    async def _get_pool(self, budget: WaitBudget, attempt: _Attempt) -> AsyncConnectionPool[Any]:
        if self._pool is not None:
            return self._pool
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        try:
            # One direct connection first: it fails at once when the server is unreachable
            # (a pool would keep retrying), and creates the tables under a lock.
            conn = await psycopg.AsyncConnection.connect(
                self._dsn, autocommit=True, connect_timeout=self._connect_timeout(budget.seconds)
            )
            attempt.conn = conn
            try:
                await _set_timeouts(conn, budget.seconds)
                await conn.execute("BEGIN")
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext('tether_sessions_schema'))"
                )
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.sessions} ("
                    "name text PRIMARY KEY, id text NOT NULL, "
                    "created_at double precision NOT NULL, "
                    "updated_at timestamptz NOT NULL DEFAULT now(), version bigint NOT NULL)"
                )
                await conn.execute(
                    f"ALTER TABLE {self.sessions} ADD COLUMN IF NOT EXISTS lease_owner text, "
                    "ADD COLUMN IF NOT EXISTS lease_expires double precision"
                )
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.messages} ("
                    f"session text NOT NULL REFERENCES {self.sessions}(name) ON DELETE CASCADE, "
                    "seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session, seq))"
                )
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.quarantine_table} ("
                    "id bigserial PRIMARY KEY, session text NOT NULL, seq bigint NOT NULL, "
                    "body text NOT NULL, quarantined_at timestamptz NOT NULL DEFAULT now())"
                )
                await conn.execute("COMMIT")
            finally:
                attempt.conn = None
                await conn.close()
        except (psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable):
            raise budget.error("postgres", "creating its tables") from None
        except psycopg.Error as exc:
            raise SessionError(
                f"Cannot reach the PostgreSQL session store: {_describe(exc)}. Check that the "
                "server is running and the connection settings ([sessions] settings) are right."
            ) from None
        if self._pool is not None:  # another task got there first
            return self._pool
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._dsn,
            min_size=self.min_connections,
            max_size=self.max_connections,
            kwargs={
                "autocommit": True,
                "connect_timeout": self._connect_timeout(self.connect_timeout_s),
            },
            open=False,
            timeout=self.timeout_s,
            reconnect_timeout=max(self.timeout_s, 60.0),
        )
        await pool.open(wait=False)
        self._pool = pool
        return pool

    async def _op(
        self, what: str, work: Work[T], *, idempotent: bool, sets_timeouts: bool = False
    ) -> T:
        """Run ``work`` on a pooled connection within the operation's budget; retry it on
        a fresh connection when the server had closed the one it got and nothing can have
        been committed (or the work is ``idempotent``). Unless ``sets_timeouts`` (the work
        sends :meth:`_Attempt.timeouts` itself, in the same round trip as its statement),
        the connection's statement and lock timeouts are set first, a round trip of their
        own.

        :raises SessionTimeoutError: the budget ran out (the run's deadline, or timeout_s).
        :raises SessionError: the store failed.
        """
        budget = wait_budget(self.timeout_s)
        until = time.monotonic() + budget.seconds
        for number in range(1, _ATTEMPTS + 1):
            left = WaitBudget(max(until - time.monotonic(), 0.0), budget.by_run)
            attempt = _Attempt()
            try:
                return await bounded(
                    self._attempt(work, left, attempt, what, sets_timeouts),
                    left,
                    store="postgres",
                    what=what,
                    abort=attempt.abort,
                )
            except _Broken as exc:
                if number == _ATTEMPTS or not (idempotent or exc.retry):
                    raise SessionError(
                        f"The PostgreSQL session store failed while {what}: {exc}. It may or "
                        "may not have been written; reopen the session to see."
                    ) from None
        raise AssertionError("unreachable")

    async def _attempt(
        self, work: Work[T], budget: WaitBudget, attempt: _Attempt, what: str, sets_timeouts: bool
    ) -> T:
        import psycopg
        from psycopg_pool import PoolTimeout

        until = time.monotonic() + budget.seconds

        def left() -> WaitBudget:
            return WaitBudget(max(until - time.monotonic(), 0.0), budget.by_run)

        pool = await self._get_pool(budget, attempt)
        try:
            conn = await pool.getconn(timeout=max(left().seconds, 0.001))
        except PoolTimeout:
            raise left().error("postgres", f"{what} (no connection could be had)") from None
        attempt.conn = conn
        try:
            attempt.until = until
            if not sets_timeouts:
                await _set_timeouts(conn, left().seconds)
            return await work(conn, attempt)
        except (psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable):
            await conn.close()
            raise left().error("postgres", what) from None
        except psycopg.Error as exc:
            broken = conn.broken or conn.closed
            await conn.close()
            if broken:
                raise _Broken(_describe(exc), retry=not attempt.committing) from None
            raise SessionError(f"The PostgreSQL session store failed: {_describe(exc)}.") from None
        except BaseException:
            await conn.close()  # never roll back over a connection that may be stalled
            raise
        finally:
            attempt.conn = None
            await pool.putconn(conn)

    # -- SessionIO ------------------------------------------------------------------------
    async def load(self, name: str) -> StoredRecord | None:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> StoredRecord | None:
            cursor = await conn.execute(
                f"SELECT id, created_at, version, ARRAY(SELECT body FROM {self.messages} "
                f"WHERE session = s.name ORDER BY seq) FROM {self.sessions} s WHERE name = %s",
                (name,),
            )
            row = await cursor.fetchone()
            if row is None:
                return None
            return StoredRecord(row[0], row[1], row[2], list(row[3]))

        return await self._op("loading the session", work, idempotent=True)

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> None:
            await conn.execute(
                f"INSERT INTO {self.sessions} (name, id, created_at, version) "
                "VALUES (%s, %s, %s, 0) ON CONFLICT (name) DO NOTHING",
                (name, session_id, created_at),
            )

        await self._op("creating the session", work, idempotent=True)
        record = await self.load(name)
        if record is None:  # deleted between the two statements
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
        # Two round trips, pipelined: the timeouts, the insert and the locking read; then
        # the lease, the history and the commit.
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> StoredRecord | Lease:
            async with conn.pipeline():
                await attempt.timeouts(conn)
                await conn.execute("BEGIN")
                await conn.execute(
                    f"INSERT INTO {self.sessions} (name, id, created_at, version) "
                    "VALUES (%s, %s, %s, 0) ON CONFLICT (name) DO NOTHING",
                    (name, session_id, created_at),
                )
                cursor = await conn.execute(
                    "SELECT id, created_at, version, lease_owner, "
                    "lease_expires - extract(epoch FROM clock_timestamp())::double precision "
                    f"FROM {self.sessions} WHERE name = %s FOR UPDATE",
                    (name,),
                )
                row = await cursor.fetchone()
                assert row is not None
                owner, left = row[3], row[4]
                if owner is not None and owner not in (writer, replacing) and left > 0:
                    attempt.committing = True
                    await conn.execute("COMMIT")
                    return Lease(owner, float(left))
                await conn.execute(
                    f"UPDATE {self.sessions} SET lease_owner = %s, lease_expires = "
                    "extract(epoch FROM clock_timestamp())::double precision + %s WHERE name = %s",
                    (writer, ttl, name),
                )
                history = await conn.execute(
                    f"SELECT body FROM {self.messages} WHERE session = %s ORDER BY seq", (name,)
                )
                attempt.committing = True
                await conn.execute("COMMIT")
            lines = [body for (body,) in await history.fetchall()]
            return StoredRecord(row[0], row[1], row[2], lines)

        # Idempotent: claiming again for the same writer finds its own lease.
        return await self._op("claiming the session", work, idempotent=True, sets_timeouts=True)

    async def renew(self, name: str, writer: str, ttl: float) -> bool:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> bool:
            cursor = await conn.execute(
                f"UPDATE {self.sessions} SET lease_expires = "
                "extract(epoch FROM clock_timestamp())::double precision + %s "
                "WHERE name = %s AND lease_owner = %s",
                (ttl, name, writer),
            )
            return cursor.rowcount > 0

        return await self._op("renewing the lease", work, idempotent=True)

    async def release(self, name: str, writer: str) -> None:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> None:
            async with conn.pipeline():  # one round trip with the timeouts
                await attempt.timeouts(conn)
                await conn.execute(
                    f"UPDATE {self.sessions} SET lease_owner = NULL, lease_expires = NULL "
                    "WHERE name = %s AND lease_owner = %s",
                    (name, writer),
                )

        await self._op("releasing the lease", work, idempotent=True, sets_timeouts=True)

    async def _bump(
        self, conn: AsyncConnection[Any], name: str, expected: int, writer: str | None
    ) -> int:
        cursor = await conn.execute(
            f"UPDATE {self.sessions} SET version = version + 1, updated_at = now() "
            "WHERE name = %s AND version = %s AND (%s::text IS NULL OR lease_owner = %s) "
            "RETURNING version",
            (name, expected, writer, writer),
        )
        row = await cursor.fetchone()
        if row is None:
            cursor = await conn.execute(
                f"SELECT version FROM {self.sessions} WHERE name = %s", (name,)
            )
            found = await cursor.fetchone()
            await conn.execute("ROLLBACK")
            if found is not None and found[0] == expected:
                raise lease_lost(name, expected)
            raise conflict(name, expected, None if found is None else found[0])
        version: int = row[0]
        return version

    async def append(
        self, name: str, expected: int, position: int, line: str, writer: str | None = None
    ) -> int:
        # One round trip: the timeouts and one statement (the version check and bump, and
        # the insert only if the bump happened) go out together in pipeline mode, and the
        # statement commits on its own. Only a refused write takes a second look.
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> int:
            attempt.committing = True
            async with conn.pipeline():
                await attempt.timeouts(conn)
                cursor = await conn.execute(
                    f"WITH bumped AS (UPDATE {self.sessions} SET version = version + 1, "
                    "updated_at = now() WHERE name = %s AND version = %s "
                    "AND (%s::text IS NULL OR lease_owner = %s) RETURNING version), "
                    f"stored AS (INSERT INTO {self.messages} (session, seq, body) "
                    "SELECT %s, %s, %s FROM bumped) SELECT version FROM bumped",
                    (name, expected, writer, writer, name, position, line),
                )
            row = await cursor.fetchone()
            if row is not None:
                version: int = row[0]
                return version
            cursor = await conn.execute(
                f"SELECT version FROM {self.sessions} WHERE name = %s", (name,)
            )
            found = await cursor.fetchone()
            if found is not None and found[0] == expected:
                raise lease_lost(name, expected)
            raise conflict(name, expected, None if found is None else found[0])

        return await self._op("appending a message", work, idempotent=False, sets_timeouts=True)

    async def replace(
        self, name: str, expected: int, lines: Sequence[str], writer: str | None = None
    ) -> int:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> int:
            await conn.execute("BEGIN")
            version = await self._bump(conn, name, expected, writer)
            await conn.execute(f"DELETE FROM {self.messages} WHERE session = %s", (name,))
            if lines:
                await conn.execute(
                    f"INSERT INTO {self.messages} (session, seq, body) SELECT %s, ord - 1, body "
                    "FROM unnest(%s::text[]) WITH ORDINALITY AS t(body, ord)",
                    (name, list(lines)),
                )
            attempt.committing = True
            await conn.execute("COMMIT")
            return version

        return await self._op("replacing the history", work, idempotent=False)

    async def quarantine(self, name: str, entries: Sequence[tuple[int, str]]) -> None:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> None:
            attempt.committing = True
            await conn.execute(
                f"INSERT INTO {self.quarantine_table} (session, seq, body) "
                "SELECT %s, seq, body FROM unnest(%s::bigint[], %s::text[]) AS t(seq, body)",
                (name, [seq for seq, _ in entries], [body for _, body in entries]),
            )

        await self._op("quarantining records", work, idempotent=False)

    async def quarantined(self, name: str) -> list[str]:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> list[str]:
            cursor = await conn.execute(
                f"SELECT body FROM {self.quarantine_table} WHERE session = %s ORDER BY id",
                (name,),
            )
            return [body for (body,) in await cursor.fetchall()]

        return await self._op("reading the quarantine", work, idempotent=True)

    async def summaries(self) -> list[SessionSummary]:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> list[SessionSummary]:
            cursor = await conn.execute(
                f"SELECT s.name, s.updated_at, (SELECT count(*) FROM {self.messages} m "
                f"WHERE m.session = s.name) FROM {self.sessions} s"
            )
            rows = await cursor.fetchall()
            return [SessionSummary(name, count, updated) for name, updated, count in rows]

        return await self._op("listing sessions", work, idempotent=True)

    async def delete(self, name: str) -> bool:
        async def work(conn: AsyncConnection[Any], attempt: _Attempt) -> bool:
            attempt.committing = True
            cursor = await conn.execute(
                f"WITH gone AS (DELETE FROM {self.quarantine_table} WHERE session = %s) "
                f"DELETE FROM {self.sessions} WHERE name = %s",
                (name, name),
            )
            return cursor.rowcount > 0

        return await self._op("deleting the session", work, idempotent=False)

    async def aclose(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close(timeout=1.0)


class PostgresSessionStore(VersionedStore):
    """The ``postgres`` session store; see the module docstring for its settings."""

    kind = "postgres"

    def __init__(
        self,
        dsn: str | None = None,
        *,
        dsn_env: str | None = None,
        schema: str = "public",
        min_connections: int = 1,
        max_connections: int = 10,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        lease_wait_s: float = 0.0,
        data_dir: str | None = None,
    ) -> None:
        super().__init__(
            PostgresSessionIO(
                resolve_dsn(dsn, dsn_env),
                schema=schema,
                min_connections=min_connections,
                max_connections=max_connections,
                timeout_s=timeout_s,
                connect_timeout_s=connect_timeout_s,
            ),
            lease_ttl_s=lease_ttl_s,
            lease_wait_s=lease_wait_s,
        )

    def __repr__(self) -> str:
        io = self.io
        assert isinstance(io, PostgresSessionIO)
        return f"<PostgresSessionStore schema={io.schema}>"


async def _set_timeouts(conn: AsyncConnection[Any], seconds: float) -> None:
    """``statement_timeout`` and ``lock_timeout`` from the time left, so the server gives
    up by itself (and lets go of what it waits on) when the client does."""
    ms = f"{max(int(seconds * 1000), 1)}ms"
    await conn.execute(
        "SELECT set_config('statement_timeout', %s, false), set_config('lock_timeout', %s, false)",
        (ms, ms),
    )


def _describe(exc: BaseException) -> str:
    """An error's message without anything that could be a connection string."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return re.sub(r"(postgres(?:ql)?://)\S+", r"\1...", text)
