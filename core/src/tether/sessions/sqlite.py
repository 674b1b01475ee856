"""``SqliteSessionStore``: every session in one SQLite file, safe for many processes.

The embedded choice when several worker processes on one machine share sessions (the
JSONL store's file lock lets only one process open a session at a time). Each write is
one ``BEGIN IMMEDIATE`` transaction that checks the session's version first (see
:mod:`tether.sessions.versioned`); the file is in WAL mode so readers never wait for the
writer. Work runs in a thread so the event loop never blocks on the disk.

Writers hold a lease on the session (columns ``lease_owner`` and ``lease_expires``; see
:mod:`tether.sessions.versioned`); records that do not parse are copied to the table
``tether_session_quarantine`` before the repaired history replaces them. Every wait for
the file's lock ends by the run's deadline (``busy_timeout`` is set from the time left).

Settings (``[sessions] settings``): ``path`` (default ``<data dir>/sessions.sqlite3``),
``busy_timeout`` in seconds (default 30), ``synchronous`` (``"full"``, the default, makes
every committed append survive a power loss; ``"normal"`` survives a process crash),
``lease_ttl_s`` (default 30). A file with other hard links is refused
(:class:`~tether.errors.SessionError`): SQLite follows symbolic links to the one real file,
but two hard-linked names get two write-ahead logs and corrupt it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from ..errors import ConfigError, SessionError
from .versioned import (
    DEFAULT_LEASE_TTL_S,
    Lease,
    SessionSummary,
    StoredRecord,
    VersionedStore,
    conflict,
    lease_lost,
)
from .waits import bounded, wait_budget

__all__ = ["SqliteSessionIO", "SqliteSessionStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tether_sessions (
    name TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tether_session_messages (
    session TEXT NOT NULL REFERENCES tether_sessions(name) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tether_session_quarantine (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    quarantined_at REAL NOT NULL
);
"""

_LEASE_COLUMNS = (("lease_owner", "TEXT"), ("lease_expires", "REAL"))


class SqliteSessionIO:
    """The :class:`~tether.sessions.versioned.SessionIO` of one SQLite file."""

    def __init__(
        self, path: Path, *, busy_timeout: float = 30.0, synchronous: str = "full"
    ) -> None:
        if synchronous.lower() not in ("full", "normal"):
            raise ConfigError(
                f'[sessions] settings.synchronous must be "full" or "normal", not {synchronous!r}.'
            )
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous.upper()
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # -- plumbing -------------------------------------------------------------------------
    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        if self._conn is None:
            _refuse_links(self.path)
            conn: sqlite3.Connection | None = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.path,
                    timeout=max(busy_timeout, 0.001),
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute("BEGIN IMMEDIATE")  # one process at a time creates or extends
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(tether_sessions)")}
                for column, kind in _LEASE_COLUMNS:
                    if column not in columns:
                        conn.execute(f"ALTER TABLE tether_sessions ADD COLUMN {column} {kind}")
                conn.execute("COMMIT")
            except (sqlite3.Error, OSError) as exc:
                if conn is not None:
                    conn.close()
                raise SessionError(f"Cannot open the session database {self.path}: {exc}.") from exc
            self._conn = conn
        return self._conn

    async def _run(self, work: Callable[[sqlite3.Connection], T], what: str = "a query") -> T:
        budget = wait_budget(self.busy_timeout)
        started = time.monotonic()

        def locked() -> T:
            if not self._lock.acquire(timeout=max(budget.seconds, 0.001)):
                raise budget.error("sqlite", what)
            try:
                conn = self._connect(budget.seconds - (time.monotonic() - started))
                left = budget.seconds - (time.monotonic() - started)
                if left <= 0:
                    raise budget.error("sqlite", what)
                conn.execute(f"PRAGMA busy_timeout = {max(int(left * 1000), 1)}")
                try:
                    return work(conn)
                except sqlite3.OperationalError as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if "locked" in str(exc) or "busy" in str(exc):
                        raise budget.error("sqlite", what) from None
                    raise SessionError(f"Session database {self.path} failed: {exc}.") from exc
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise SessionError(f"Session database {self.path} failed: {exc}.") from exc
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                self._lock.release()

        return await bounded(asyncio.to_thread(locked), budget, store="sqlite", what=what)

    # -- SessionIO ------------------------------------------------------------------------
    async def load(self, name: str) -> StoredRecord | None:
        def work(conn: sqlite3.Connection) -> StoredRecord | None:
            conn.execute("BEGIN")
            row = conn.execute(
                "SELECT id, created_at, version FROM tether_sessions WHERE name = ?", (name,)
            ).fetchone()
            if row is None:
                conn.execute("COMMIT")
                return None
            lines = [
                body
                for (body,) in conn.execute(
                    "SELECT body FROM tether_session_messages WHERE session = ? ORDER BY seq",
                    (name,),
                )
            ]
            conn.execute("COMMIT")
            return StoredRecord(row[0], row[1], row[2], lines)

        return await self._run(work)

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        def work(conn: sqlite3.Connection) -> StoredRecord:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT OR IGNORE INTO tether_sessions (name, id, created_at, updated_at, version) "
                "VALUES (?, ?, ?, ?, 0)",
                (name, session_id, created_at, created_at),
            )
            row = conn.execute(
                "SELECT id, created_at, version FROM tether_sessions WHERE name = ?", (name,)
            ).fetchone()
            lines = [
                body
                for (body,) in conn.execute(
                    "SELECT body FROM tether_session_messages WHERE session = ? ORDER BY seq",
                    (name,),
                )
            ]
            conn.execute("COMMIT")
            return StoredRecord(row[0], row[1], row[2], lines)

        return await self._run(work)

    async def claim(
        self,
        name: str,
        writer: str,
        ttl: float,
        session_id: str,
        created_at: float,
        replacing: str | None = None,
    ) -> StoredRecord | Lease:
        def work(conn: sqlite3.Connection) -> StoredRecord | Lease:
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT OR IGNORE INTO tether_sessions (name, id, created_at, updated_at, version) "
                "VALUES (?, ?, ?, ?, 0)",
                (name, session_id, created_at, created_at),
            )
            row = conn.execute(
                "SELECT id, created_at, version, lease_owner, lease_expires "
                "FROM tether_sessions WHERE name = ?",
                (name,),
            ).fetchone()
            owner, expires = row[3], row[4]
            if owner is not None and owner not in (writer, replacing) and expires > now:
                conn.execute("COMMIT")
                return Lease(owner, expires - now)
            conn.execute(
                "UPDATE tether_sessions SET lease_owner = ?, lease_expires = ? WHERE name = ?",
                (writer, now + ttl, name),
            )
            lines = [
                body
                for (body,) in conn.execute(
                    "SELECT body FROM tether_session_messages WHERE session = ? ORDER BY seq",
                    (name,),
                )
            ]
            conn.execute("COMMIT")
            return StoredRecord(row[0], row[1], row[2], lines)

        return await self._run(work, "claiming the session")

    async def renew(self, name: str, writer: str, ttl: float) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE tether_sessions SET lease_expires = ? "
                    "WHERE name = ? AND lease_owner = ?",
                    (time.time() + ttl, name, writer),
                ).rowcount
            )

        return await self._run(work, "renewing the lease")

    async def release(self, name: str, writer: str) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE tether_sessions SET lease_owner = NULL, lease_expires = NULL "
                "WHERE name = ? AND lease_owner = ?",
                (name, writer),
            )

        await self._run(work, "releasing the lease")

    async def quarantine(self, name: str, entries: Sequence[tuple[int, str]]) -> None:
        def work(conn: sqlite3.Connection) -> None:
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO tether_session_quarantine (session, seq, body, quarantined_at) "
                "VALUES (?, ?, ?, ?)",
                [(name, seq, body, now) for seq, body in entries],
            )
            conn.execute("COMMIT")

        await self._run(work, "quarantining records")

    async def quarantined(self, name: str) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            return [
                body
                for (body,) in conn.execute(
                    "SELECT body FROM tether_session_quarantine WHERE session = ? ORDER BY rowid",
                    (name,),
                )
            ]

        return await self._run(work, "reading the quarantine")

    def _bump(self, conn: sqlite3.Connection, name: str, expected: int, writer: str | None) -> None:
        updated = conn.execute(
            "UPDATE tether_sessions SET version = version + 1, updated_at = ? "
            "WHERE name = ? AND version = ? AND (? IS NULL OR lease_owner = ?)",
            (time.time(), name, expected, writer, writer),
        ).rowcount
        if updated != 1:
            row = conn.execute(
                "SELECT version, lease_owner FROM tether_sessions WHERE name = ?", (name,)
            ).fetchone()
            if row is not None and row[0] == expected:
                raise lease_lost(name, expected)
            raise conflict(name, expected, None if row is None else row[0])

    async def append(
        self, name: str, expected: int, position: int, line: str, writer: str | None = None
    ) -> int:
        def work(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            self._bump(conn, name, expected, writer)
            conn.execute(
                "INSERT INTO tether_session_messages (session, seq, body) VALUES (?, ?, ?)",
                (name, position, line),
            )
            conn.execute("COMMIT")
            return expected + 1

        return await self._run(work, "appending a message")

    async def replace(
        self, name: str, expected: int, lines: Sequence[str], writer: str | None = None
    ) -> int:
        def work(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            self._bump(conn, name, expected, writer)
            conn.execute("DELETE FROM tether_session_messages WHERE session = ?", (name,))
            conn.executemany(
                "INSERT INTO tether_session_messages (session, seq, body) VALUES (?, ?, ?)",
                [(name, seq, line) for seq, line in enumerate(lines)],
            )
            conn.execute("COMMIT")
            return expected + 1

        return await self._run(work, "replacing the history")

    async def summaries(self) -> list[SessionSummary]:
        def work(conn: sqlite3.Connection) -> list[SessionSummary]:
            rows = conn.execute(
                "SELECT s.name, s.updated_at, "
                "(SELECT COUNT(*) FROM tether_session_messages m WHERE m.session = s.name) "
                "FROM tether_sessions s"
            ).fetchall()
            return [
                SessionSummary(name, count, datetime.fromtimestamp(updated, tz=UTC))
                for name, updated, count in rows
            ]

        return await self._run(work)

    async def delete(self, name: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM tether_session_messages WHERE session = ?", (name,))
            conn.execute("DELETE FROM tether_session_quarantine WHERE session = ?", (name,))
            deleted = conn.execute("DELETE FROM tether_sessions WHERE name = ?", (name,)).rowcount
            conn.execute("COMMIT")
            return bool(deleted)

        return await self._run(work)

    async def aclose(self) -> None:
        def close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.to_thread(close)


class SqliteSessionStore(VersionedStore):
    """Sessions in one SQLite file (the ``sqlite`` session store); see the module docstring.

    :param path: the database file; default ``<data_dir>/sessions.sqlite3``.
    """

    kind = "sqlite"

    def __init__(
        self,
        path: str | None = None,
        *,
        data_dir: str | None = None,
        busy_timeout: float = 30.0,
        synchronous: str = "full",
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        lease_wait_s: float = 0.0,
    ) -> None:
        if path is None:
            if data_dir is None:
                from ..config import data_dir as default_data_dir

                data_dir = str(default_data_dir())
            file = Path(data_dir) / "sessions.sqlite3"
        else:
            file = Path(path)
        super().__init__(
            SqliteSessionIO(file, busy_timeout=busy_timeout, synchronous=synchronous),
            lease_ttl_s=lease_ttl_s,
            lease_wait_s=lease_wait_s,
        )

    def __repr__(self) -> str:
        io = self.io
        assert isinstance(io, SqliteSessionIO)
        return f"<SqliteSessionStore {io.path}>"


def _refuse_links(path: Path) -> None:
    """Refuse a database file with other hard links (SQLite resolves symbolic links, so a
    symlink names the same database; a hard link does not, and two names of one file get
    two write-ahead logs, which corrupts it)."""
    try:
        links = path.stat().st_nlink
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SessionError(f"Cannot open the session database {path}: {exc}.") from exc
    if links > 1:
        raise SessionError(
            f"The session database {path} has {links - 1} other hard link(s); refusing to use "
            "it, since SQLite cannot lock one file under two names. Remove the other names, "
            "or copy the database to a file of its own."
        )
