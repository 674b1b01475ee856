"""The session-store contract on the built-in stores (JSONL, SQLite), and the
configuration that picks a store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.config import parse_config
from tether.errors import ConfigError, SessionLockedError
from tether.messages import Message
from tether.plugins import PluginManager
from tether.sessions import (
    JsonlBackend,
    SqliteSessionStore,
    open_session_backend,
)
from tether_testing import SessionStoreContract


class TestJsonlStore(SessionStoreContract):
    exclusive_open = True

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Callable[[], JsonlBackend]:
        return lambda: JsonlBackend(str(tmp_path / "sessions"), durable=False)

    async def store_raw_line(self, store: Any, name: str, line: str) -> bool:
        with store.files.path(name).open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        return True


class TestSqliteStore(SessionStoreContract):
    exclusive_open = True  # the writer lease

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Callable[[], SqliteSessionStore]:
        return lambda: SqliteSessionStore(str(tmp_path / "sessions.sqlite3"))

    async def store_raw_line(self, store: Any, name: str, line: str) -> bool:
        with sqlite3.connect(store.io.path) as conn:
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM tether_session_messages WHERE session = ?", (name,)
            ).fetchone()
            conn.execute(
                "INSERT INTO tether_session_messages VALUES (?, ?, ?)", (name, count, line)
            )
        return True


def test_the_configured_store_is_made_with_its_settings(tmp_path: Path) -> None:
    config = parse_config(
        {"sessions": {"store": "sqlite", "settings": {"path": str(tmp_path / "s.db")}}}
    )
    store = open_session_backend(config, PluginManager(entry_points=False))
    assert isinstance(store, SqliteSessionStore)
    assert store.io.path == tmp_path / "s.db"  # type: ignore[attr-defined]


def test_the_default_store_is_jsonl_in_the_data_dir(tmp_path: Path) -> None:
    config = parse_config({"data_dir": str(tmp_path)})
    store = open_session_backend(config, PluginManager(entry_points=False))
    assert isinstance(store, JsonlBackend)
    assert store.files.root == tmp_path / "sessions"


def test_an_unknown_store_names_the_installed_ones() -> None:
    config = parse_config({"sessions": {"store": "sqlit"}})
    with pytest.raises(ConfigError, match=r'No session store named "sqlit".*Did you mean "sqlite"'):
        open_session_backend(config, PluginManager(entry_points=False))


def test_unknown_keys_in_the_sessions_section_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"sessions\.backend"):
        parse_config({"sessions": {"backend": "sqlite"}})


def test_a_bad_sqlite_setting_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="synchronous"):
        SqliteSessionStore(str(tmp_path / "s.db"), synchronous="sometimes")


def test_a_hard_linked_jsonl_session_is_refused_for_writing(tmp_path: Path) -> None:
    from tether.errors import SessionError
    from tether.messages import Message
    from tether.sessions import JsonlSession

    original = tmp_path / "a.jsonl"
    with JsonlSession(original) as session:
        session.append(Message.user("hello"))
    other = tmp_path / "b.jsonl"
    other.hardlink_to(original)  # another name: another lock file, so another writer
    for path in (original, other):
        with pytest.raises(SessionError, match="hard link"):
            JsonlSession(path)
    with JsonlSession(other, read_only=True) as reader:  # reading is harmless
        assert [m.text for m in reader.messages] == ["hello"]
    other.unlink()
    with JsonlSession(original) as session:  # one name again: writable
        session.append(Message.user("again"))


def test_a_hard_linked_sqlite_session_database_is_refused(tmp_path: Path) -> None:
    import asyncio

    from tether.errors import SessionError

    async def main() -> None:
        path = tmp_path / "sessions.sqlite3"
        store = SqliteSessionStore(str(path))
        await (await store.open("one")).aclose()
        await store.aclose()
        (tmp_path / "copy.sqlite3").hardlink_to(path)
        linked = SqliteSessionStore(str(path))
        with pytest.raises(SessionError, match="hard link"):
            await linked.open("one")
        await linked.aclose()

    asyncio.run(main())


_GARBAGE = st.text(min_size=0, max_size=40).filter(lambda text: not _parses(text))


def _parses(text: str) -> bool:
    from tether.messages import Message

    try:
        Message.model_validate_json(text)
    except ValueError:
        return False
    return True


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 999), _GARBAGE), max_size=8))
def test_records_that_do_not_parse_are_moved_to_the_quarantine_byte_for_byte(
    records: list[int | str],
) -> None:
    """Whatever damaged records sit among good ones: a writer's open keeps the good ones
    in order and moves every damaged one, exactly as stored, to the quarantine."""
    import asyncio
    import tempfile

    from tether.messages import Message

    lines = [Message.user(f"m{r}").to_json() if isinstance(r, int) else r for r in records]

    async def main(path: str) -> None:
        store = SqliteSessionStore(path)
        await (await store.open("s")).aclose()
        with sqlite3.connect(path) as conn:
            conn.executemany(
                "INSERT INTO tether_session_messages VALUES ('s', ?, ?)", enumerate(lines)
            )
        session = await store.open("s")
        assert [m.text for m in session.messages] == [
            f"m{r}" for r in records if isinstance(r, int)
        ]
        assert await store.quarantined("s") == [r for r in records if isinstance(r, str)]
        await session.aclose()
        await store.aclose()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(main(f"{directory}/sessions.sqlite3"))


def test_a_session_database_from_before_leases_is_extended_and_keeps_its_sessions(
    tmp_path: Path,
) -> None:
    import asyncio

    path = tmp_path / "sessions.sqlite3"
    with sqlite3.connect(path) as conn:  # the schema as it was before writer leases
        conn.executescript(
            "CREATE TABLE tether_sessions (name TEXT PRIMARY KEY, id TEXT NOT NULL, "
            "created_at REAL NOT NULL, updated_at REAL NOT NULL, version INTEGER NOT NULL);"
            "CREATE TABLE tether_session_messages (session TEXT NOT NULL, seq INTEGER NOT NULL, "
            "body TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;"
            "INSERT INTO tether_sessions VALUES ('old', 'id-1', 1.0, 1.0, 1);"
        )
        conn.execute(
            "INSERT INTO tether_session_messages VALUES ('old', 0, ?)",
            (Message.user("from before").to_json(),),
        )

    async def main() -> None:
        store = SqliteSessionStore(str(path))
        session = await store.open("old")
        assert [m.text for m in session.messages] == ["from before"]
        with pytest.raises(SessionLockedError):
            await store.open("old")  # the lease works on the extended table
        await session.aclose()
        await store.aclose()

    asyncio.run(main())
