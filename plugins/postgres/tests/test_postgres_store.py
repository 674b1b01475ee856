"""The session-store contract against the real PostgreSQL server, in a database of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from tether.errors import ConfigError, SessionConflictError, SessionError
from tether.sessions.versioned import StoredRecord
from tether_postgres import PostgresSessionStore
from tether_postgres.testing import temporary_database
from tether_testing import SessionStoreContract


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with temporary_database(prefix="tether_pg_store") as dsn:
        yield dsn


class TestPostgresStore(SessionStoreContract):
    exclusive_open = True  # the writer lease

    @pytest.fixture
    def store_factory(self, database: str) -> Callable[[], PostgresSessionStore]:
        return lambda: PostgresSessionStore(database, max_connections=4)

    async def store_raw_line(self, store: Any, name: str, line: str) -> bool:
        async with await psycopg.AsyncConnection.connect(store.io._dsn, autocommit=True) as conn:
            table = store.io.messages
            await conn.execute(
                f"INSERT INTO {table} (session, seq, body) "
                f"SELECT %s, count(*), %s FROM {table} WHERE session = %s",
                (name, line, name),
            )
        return True


class TestPostgresStoreInASchema(TestPostgresStore):
    @pytest.fixture
    def store_factory(self, database: str) -> Callable[[], PostgresSessionStore]:
        return lambda: PostgresSessionStore(database, schema="agents", max_connections=4)


def test_the_connection_string_comes_from_the_environment(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SESSIONS_DSN", database)
    store = PostgresSessionStore(dsn_env="MY_SESSIONS_DSN")
    assert store.io._dsn == database  # type: ignore[attr-defined]


def test_a_missing_connection_string_says_where_to_put_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_POSTGRES_DSN", raising=False)
    with pytest.raises(ConfigError, match="TETHER_POSTGRES_DSN"):
        PostgresSessionStore()


def test_an_unreachable_server_is_a_session_error_without_the_password() -> None:
    import asyncio

    async def main() -> None:
        store = PostgresSessionStore("postgresql://agent:hunter2@127.0.0.1:1/nowhere")
        try:
            with pytest.raises(SessionError) as caught:
                await store.open("x")
            assert "hunter2" not in str(caught.value)
        finally:
            await store.aclose()

    asyncio.run(main())


def test_a_schema_that_is_not_an_identifier_is_refused(database: str) -> None:
    with pytest.raises(ConfigError, match="schema"):
        PostgresSessionStore(database, schema='x"; DROP TABLE y; --')


def test_the_test_database_is_dropped_afterwards() -> None:
    from tether_postgres.testing import base_dsn

    with temporary_database(prefix="tether_pg_drop") as dsn:
        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(base_dsn()) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    assert row is None


async def test_a_refused_append_writes_nothing_and_names_the_version_it_found(
    database: str,
) -> None:
    store = PostgresSessionStore(database, max_connections=2)
    io = store.io
    await io.create("refused", "id-1", 0.0)
    assert await io.append("refused", 0, 0, '"first"') == 1
    with pytest.raises(SessionConflictError) as stale:
        await io.append("refused", 0, 1, '"stale"')
    assert stale.value.actual == 1
    claimed = await io.claim("refused", "writer-a", 30.0, "id-1", 0.0)
    assert isinstance(claimed, StoredRecord)
    with pytest.raises(SessionConflictError, match="lease"):
        await io.append("refused", 1, 1, '"not the lease holder"', "writer-b")
    assert await io.append("refused", 1, 1, '"second"', "writer-a") == 2
    record = await io.load("refused")
    assert record is not None and record.lines == ['"first"', '"second"']
    with pytest.raises(SessionConflictError) as gone:
        await io.append("missing", 0, 0, '"x"')
    assert gone.value.actual is None
    await store.aclose()
