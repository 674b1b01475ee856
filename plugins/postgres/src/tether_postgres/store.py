"""``PostgresSessionStore``: named sessions in two PostgreSQL tables, through psycopg 3's
asyncio API and a connection pool.

Every write is one transaction that first moves the session's version from the one the
writer expects to the next (``UPDATE ... WHERE version = %s``, which row-locks the
session, so concurrent writers queue and all but the first find the version moved) and
then writes the message rows; a writer that finds another version gets
:class:`~tether.errors.SessionConflictError` and the transaction writes nothing. A
committed append survives a crash of the worker and, with PostgreSQL's default
``synchronous_commit``, of the database server.

Settings (``[sessions] settings``):

- ``dsn``: a libpq connection string or URL; or ``dsn_env``, the environment variable
  holding it (default ``TETHER_POSTGRES_DSN``). Put passwords in the environment or in
  ``~/.pgpass``, not in ``tether.toml``; they never appear in errors or logs.
- ``schema``: where the tables live (default ``public``); created if missing.
- ``min_connections``/``max_connections``: the pool size per process (1 and 10).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import ConfigError, SessionError
from tether.sessions.versioned import SessionSummary, StoredRecord, VersionedStore, conflict

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresSessionIO", "PostgresSessionStore", "resolve_dsn"]

DEFAULT_DSN_ENV = "TETHER_POSTGRES_DSN"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


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


class PostgresSessionIO:
    """The :class:`~tether.sessions.versioned.SessionIO` of PostgreSQL tables."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "public",
        min_connections: int = 1,
        max_connections: int = 10,
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
        self._dsn = dsn
        self.schema = schema
        self.min_connections = min_connections
        self.max_connections = max_connections
        self._pool: AsyncConnectionPool[Any] | None = None
        self.sessions = f'"{schema}".tether_sessions'
        self.messages = f'"{schema}".tether_session_messages'

    def __repr__(self) -> str:  # never show the connection string
        return f"<PostgresSessionIO schema={self.schema}>"

    async def _get_pool(self) -> AsyncConnectionPool[Any]:
        if self._pool is not None:
            return self._pool
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        try:
            # One direct connection first: it fails at once when the server is unreachable
            # (a pool would keep retrying), and creates the tables under a lock.
            async with (
                await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True, connect_timeout=10
                ) as conn,
                conn.transaction(),
            ):
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
                    f"CREATE TABLE IF NOT EXISTS {self.messages} ("
                    f"session text NOT NULL REFERENCES {self.sessions}(name) ON DELETE CASCADE, "
                    "seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session, seq))"
                )
        except psycopg.Error as exc:
            raise SessionError(
                f"Cannot reach the PostgreSQL session store: {_describe(exc)}. Check that the "
                "server is running and the connection settings ([sessions] settings) are right."
            ) from None
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._dsn,
            min_size=self.min_connections,
            max_size=self.max_connections,
            kwargs={"autocommit": True},
            open=False,
        )
        await pool.open(wait=True, timeout=30)
        self._pool = pool
        return pool

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection; driver errors leave as :class:`SessionError`."""
        import psycopg

        pool = await self._get_pool()
        try:
            async with pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise SessionError(f"The PostgreSQL session store failed: {_describe(exc)}.") from None

    # -- SessionIO ------------------------------------------------------------------------
    async def load(self, name: str) -> StoredRecord | None:
        async with self._connection() as conn:
            cursor = await conn.execute(
                f"SELECT id, created_at, version, ARRAY(SELECT body FROM {self.messages} "
                f"WHERE session = s.name ORDER BY seq) FROM {self.sessions} s WHERE name = %s",
                (name,),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        return StoredRecord(row[0], row[1], row[2], list(row[3]))

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        async with self._connection() as conn:
            await conn.execute(
                f"INSERT INTO {self.sessions} (name, id, created_at, version) "
                "VALUES (%s, %s, %s, 0) ON CONFLICT (name) DO NOTHING",
                (name, session_id, created_at),
            )
        record = await self.load(name)
        if record is None:  # deleted between the two statements
            raise conflict(name, 0, None)
        return record

    async def _bump(self, conn: AsyncConnection[Any], name: str, expected: int) -> int:
        cursor = await conn.execute(
            f"UPDATE {self.sessions} SET version = version + 1, updated_at = now() "
            "WHERE name = %s AND version = %s RETURNING version",
            (name, expected),
        )
        row = await cursor.fetchone()
        if row is None:
            cursor = await conn.execute(
                f"SELECT version FROM {self.sessions} WHERE name = %s", (name,)
            )
            found = await cursor.fetchone()
            raise conflict(name, expected, None if found is None else found[0])
        version: int = row[0]
        return version

    async def append(self, name: str, expected: int, position: int, line: str) -> int:
        async with self._connection() as conn, conn.transaction():
            version = await self._bump(conn, name, expected)
            await conn.execute(
                f"INSERT INTO {self.messages} (session, seq, body) VALUES (%s, %s, %s)",
                (name, position, line),
            )
        return version

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int:
        async with self._connection() as conn, conn.transaction():
            version = await self._bump(conn, name, expected)
            await conn.execute(f"DELETE FROM {self.messages} WHERE session = %s", (name,))
            if lines:
                async with conn.cursor() as cursor:
                    await cursor.executemany(
                        f"INSERT INTO {self.messages} (session, seq, body) VALUES (%s, %s, %s)",
                        [(name, seq, line) for seq, line in enumerate(lines)],
                    )
        return version

    async def summaries(self) -> list[SessionSummary]:
        async with self._connection() as conn:
            cursor = await conn.execute(
                f"SELECT s.name, s.updated_at, (SELECT count(*) FROM {self.messages} m "
                f"WHERE m.session = s.name) FROM {self.sessions} s"
            )
            rows = await cursor.fetchall()
        return [SessionSummary(name, count, updated) for name, updated, count in rows]

    async def delete(self, name: str) -> bool:
        async with self._connection() as conn:
            cursor = await conn.execute(f"DELETE FROM {self.sessions} WHERE name = %s", (name,))
            return cursor.rowcount > 0

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


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
        data_dir: str | None = None,
    ) -> None:
        super().__init__(
            PostgresSessionIO(
                resolve_dsn(dsn, dsn_env),
                schema=schema,
                min_connections=min_connections,
                max_connections=max_connections,
            )
        )

    def __repr__(self) -> str:
        io = self.io
        assert isinstance(io, PostgresSessionIO)
        return f"<PostgresSessionStore schema={io.schema}>"


def _describe(exc: BaseException) -> str:
    """An error's message without anything that could be a connection string."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return re.sub(r"(postgres(?:ql)?://)\S+", r"\1...", text)
