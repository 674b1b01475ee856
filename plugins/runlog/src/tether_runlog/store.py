"""The run log's SQLite file: one row per run, its events as JSON, one row per tool call.

Writes go through one background thread per file (:meth:`RunLog.append` only queues), so
recording a run never blocks the event loop; :meth:`RunLog.flush` waits for the queue,
and it is flushed when the process exits. Readers open the file on their own connection.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import ConfigError, TetherError

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RunLog", "RunNotFound", "RunRow", "open_run_log"]

SCHEMA_VERSION = 1

LINGER_S = 0.05
"""How long the writer waits after the first queued row, to write the rows of many short
runs in one transaction (and wake up once for them). A :meth:`RunLog.flush` cuts the wait
short: a process exiting writes its last rows at once."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    parent_run_id TEXT,
    parent_call_id TEXT,
    session_id TEXT,
    model TEXT,
    provider TEXT,
    started REAL NOT NULL,
    duration REAL,
    outcome TEXT,
    error TEXT,
    error_type TEXT,
    turns INTEGER DEFAULT 0,
    tool_calls INTEGER DEFAULT 0,
    tool_errors INTEGER DEFAULT 0,
    retries INTEGER DEFAULT 0,
    compactions INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    cost REAL,
    cost_input REAL,
    cost_output REAL,
    cost_cache_read REAL,
    cost_cache_write REAL,
    prompt TEXT,
    output TEXT,
    events TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE INDEX IF NOT EXISTS runs_parent ON runs (parent_run_id);
CREATE TABLE IF NOT EXISTS tool_calls (
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    is_error INTEGER NOT NULL,
    interrupted INTEGER NOT NULL,
    duration REAL NOT NULL,
    PRIMARY KEY (run_id, call_id)
);
"""

_COLUMNS = (
    "run_id",
    "parent_run_id",
    "parent_call_id",
    "session_id",
    "model",
    "provider",
    "started",
    "duration",
    "outcome",
    "error",
    "error_type",
    "turns",
    "tool_calls",
    "tool_errors",
    "retries",
    "compactions",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost",
    "cost_input",
    "cost_output",
    "cost_cache_read",
    "cost_cache_write",
    "prompt",
    "output",
)


class RunNotFound(TetherError):
    """No run in the log has the given id (or id prefix)."""


@dataclass(slots=True)
class RunRow:
    """One run as recorded: the summary columns and its events (see :mod:`tether_runlog`)."""

    run_id: str
    started: float
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    session_id: str | None = None
    model: str | None = None
    provider: str | None = None
    duration: float | None = None
    outcome: str | None = None
    error: str | None = None
    error_type: str | None = None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    retries: int = 0
    compactions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    cost_input: float | None = None
    cost_output: float | None = None
    cost_cache_read: float | None = None
    cost_cache_write: float | None = None
    prompt: str | None = None
    output: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    """Per tool call: ``call_id``, ``name``, ``is_error``, ``interrupted``, ``duration``."""

    @property
    def cache_hit_ratio(self) -> float | None:
        if not self.input_tokens:
            return None
        return min(self.cache_read_tokens / self.input_tokens, 1.0)

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _COLUMNS}
        out["cache_hit_ratio"] = self.cache_hit_ratio
        out["events"] = self.events
        return out


class RunLog:
    """The run log in one SQLite file. Use :func:`open_run_log` to share one per path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: queue.Queue[Any] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._lock = threading.Lock()
        self._flushing = threading.Event()

    # -- writing -----------------------------------------------------------------------------
    def append(self, row: RunRow, prepare: Callable[[RunRow], None] | None = None) -> None:
        """Queue ``row`` for writing (a run id written twice keeps the last row).

        ``prepare(row)`` runs on the writer thread just before the row is written (the
        recorder scrubs secrets there, off the event loop)."""
        with self._lock:
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(
                    target=self._write_loop, name=f"tether-runlog:{self.path.name}", daemon=True
                )
                self._writer.start()
        self._queue.put((row, prepare))

    def flush(self) -> None:
        """Block until every queued row is written."""
        if self._writer is not None and self._writer.is_alive():
            self._flushing.set()
            try:
                self._queue.join()
            finally:
                self._flushing.clear()

    def _write_loop(self) -> None:
        import logging

        connection: sqlite3.Connection | None = None
        while True:
            rows: list[tuple[RunRow, Callable[[RunRow], None] | None]] = [self._queue.get()]
            self._flushing.wait(LINGER_S)  # let a burst gather: one wake-up, one commit
            while True:  # write everything queued so far in one transaction
                try:
                    rows.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                if connection is None:
                    connection = self._connect()
                with connection:
                    connection.execute("BEGIN")  # one commit for the batch
                    for row, prepare in rows:
                        _write_one(connection, row, prepare, self.path)
            except Exception as exc:  # the writer thread must survive anything
                connection = None
                logging.getLogger("tether_runlog").warning(
                    "Could not write the run log %s: %s. Set [observers.runlog] enabled = "
                    "false (or TETHER_RUN_LOG=off) to stop recording runs.",
                    self.path,
                    exc,
                )
            finally:
                for _ in rows:
                    self._queue.task_done()

    # -- reading -----------------------------------------------------------------------------
    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        if not self.path.exists():
            raise RunNotFound(
                f"There is no run log at {self.path} yet: run an agent first "
                "(the tether command records its runs; an application's agents when [observers.runlog] enabled = true)."
            )
        with closing(self._connect()) as connection:
            yield connection

    def recent(self, limit: int = 20, *, top_level: bool = True) -> list[RunRow]:
        """The ``limit`` most recent runs, newest first (without their events)."""
        where = "WHERE parent_run_id IS NULL" if top_level else ""
        with self._reading() as db:
            cursor = db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs {where} ORDER BY started DESC LIMIT ?",
                (limit,),
            )
            return [_row(values) for values in cursor.fetchall()]

    def get(self, run_id: str) -> RunRow:
        """The run whose id is ``run_id`` or starts with it, with its events and tool calls.

        Raises :class:`RunNotFound` when none or several runs match.
        """
        with self._reading() as db:
            pattern = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            found = db.execute(
                f"SELECT {', '.join(_COLUMNS)}, events FROM runs WHERE run_id LIKE ? ESCAPE '\\' "
                "ORDER BY started DESC LIMIT 2",
                (pattern + "%",),
            ).fetchall()
            if not found:
                raise RunNotFound(
                    f'No run with id "{run_id}" in {self.path}. `tether runs` lists recent runs.'
                )
            if len(found) > 1:
                raise RunNotFound(
                    f'"{run_id}" matches several runs ({found[0][0]}, {found[1][0]}, ...). '
                    "Give more of the id."
                )
            row = _row(found[0][:-1])
            row.events = json.loads(found[0][-1])
            row.tools = [
                {
                    "call_id": call_id,
                    "name": name,
                    "is_error": bool(is_error),
                    "interrupted": bool(interrupted),
                    "duration": duration,
                }
                for call_id, name, is_error, interrupted, duration in db.execute(
                    "SELECT call_id, name, is_error, interrupted, duration FROM tool_calls "
                    "WHERE run_id = ? ORDER BY rowid",
                    (row.run_id,),
                )
            ]
            return row

    def children(self, run_id: str) -> list[RunRow]:
        """Runs started from tool calls of ``run_id``, with their events, oldest first."""
        with self._reading() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT run_id FROM runs WHERE parent_run_id = ? ORDER BY started", (run_id,)
                )
            ]
        return [self.get(child) for child in ids]

    def stats(self, since: float | None = None) -> dict[str, Any]:
        """Totals over runs started at or after ``since`` (all runs when ``None``):
        runs by outcome, tokens, cost, time, error types, and per tool its calls, errors
        and error rate."""
        cutoff = since if since is not None else 0.0
        with self._reading() as db:
            totals = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(turns),0), COALESCE(SUM(tool_calls),0), "
                "COALESCE(SUM(tool_errors),0), COALESCE(SUM(retries),0), "
                "COALESCE(SUM(compactions),0), COALESCE(SUM(input_tokens),0), "
                "COALESCE(SUM(output_tokens),0), COALESCE(SUM(cache_read_tokens),0), "
                "COALESCE(SUM(cache_write_tokens),0), SUM(cost), COALESCE(SUM(duration),0) "
                "FROM runs WHERE started >= ?",
                (cutoff,),
            ).fetchone()
            outcomes = dict(
                db.execute(
                    "SELECT outcome, COUNT(*) FROM runs WHERE started >= ? GROUP BY outcome "
                    "ORDER BY COUNT(*) DESC",
                    (cutoff,),
                ).fetchall()
            )
            errors = dict(
                db.execute(
                    "SELECT error_type, COUNT(*) FROM runs WHERE started >= ? AND error_type "
                    "IS NOT NULL GROUP BY error_type ORDER BY COUNT(*) DESC",
                    (cutoff,),
                ).fetchall()
            )
            tools = _tool_stats(db, cutoff)
        keys = [
            "runs",
            "turns",
            "tool_calls",
            "tool_errors",
            "retries",
            "compactions",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "cost",
            "duration",
        ]
        summary: dict[str, Any] = dict(zip(keys, totals, strict=True))
        summary["cache_hit_ratio"] = (
            min(summary["cache_read_tokens"] / summary["input_tokens"], 1.0)
            if summary["input_tokens"]
            else None
        )
        summary["tool_error_rate"] = (
            summary["tool_errors"] / summary["tool_calls"] if summary["tool_calls"] else 0.0
        )
        summary["outcomes"] = outcomes
        summary["error_types"] = errors
        summary["tools"] = tools
        return summary

    # -- plumbing ----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # on the writer thread, once the run is over

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(
                f"Cannot open the run log {self.path}: {exc}. Point TETHER_RUN_LOG or "
                "[observers.runlog] path at a writable file, or turn the run log off."
            ) from exc
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            connection.executescript(_SCHEMA)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif version > SCHEMA_VERSION:
            connection.close()
            raise ConfigError(
                f"The run log {self.path} was written by a newer tether (schema {version}). "
                "Upgrade tether, or point TETHER_RUN_LOG at another file."
            )
        return connection


def _tool_stats(db: sqlite3.Connection, cutoff: float) -> list[dict[str, Any]]:
    """Per tool name: calls, errors, error rate, interruptions and mean duration."""
    return [
        {
            "name": name,
            "calls": calls,
            "errors": errors,
            "error_rate": errors / calls if calls else 0.0,
            "interrupted": interrupted,
            "mean_duration": mean,
        }
        for name, calls, errors, interrupted, mean in db.execute(
            "SELECT t.name, COUNT(*), SUM(t.is_error), SUM(t.interrupted), "
            "AVG(t.duration) FROM tool_calls t JOIN runs r ON r.run_id = t.run_id "
            "WHERE r.started >= ? GROUP BY t.name ORDER BY COUNT(*) DESC, t.name",
            (cutoff,),
        )
    ]


def _write_one(
    db: sqlite3.Connection,
    row: RunRow,
    prepare: Callable[[RunRow], None] | None,
    path: Path,
) -> None:
    """Prepare and insert ``row`` inside its own savepoint of the batch's transaction: a
    row that cannot be written is left out with a warning naming it, and the other rows of
    the batch are written all the same."""
    import logging
    import sqlite3

    db.execute("SAVEPOINT run_row")
    try:
        if prepare is not None:
            prepare(row)
        _insert(db, row)
    except sqlite3.OperationalError:  # the file itself (locked, full): the batch fails
        raise
    except Exception as exc:
        db.execute("ROLLBACK TO run_row")
        logging.getLogger("tether_runlog").warning(
            "Could not record run %s in the run log %s: %s. The other runs are recorded.",
            row.run_id,
            path,
            exc,
        )
    db.execute("RELEASE run_row")


def _insert(db: sqlite3.Connection, row: RunRow) -> None:
    values = [getattr(row, name) for name in _COLUMNS]
    db.execute(
        f"INSERT OR REPLACE INTO runs ({', '.join(_COLUMNS)}, events) "
        f"VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})",
        [*values, json.dumps(row.events, ensure_ascii=False)],
    )
    db.execute("DELETE FROM tool_calls WHERE run_id = ?", (row.run_id,))
    db.executemany(
        "INSERT OR REPLACE INTO tool_calls VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                row.run_id,
                t["call_id"],
                t["name"],
                int(t["is_error"]),
                int(t["interrupted"]),
                t["duration"],
            )
            for t in row.tools
        ],
    )


def _row(values: tuple[Any, ...] | Mapping[str, Any]) -> RunRow:
    return RunRow(**dict(zip(_COLUMNS, values, strict=True)))


_LOGS: dict[Path, RunLog] = {}
_LOGS_LOCK = threading.Lock()


def open_run_log(path: Path) -> RunLog:
    """The process's one :class:`RunLog` for ``path`` (one writer thread per file)."""
    key = path.expanduser().absolute()
    with _LOGS_LOCK:
        log = _LOGS.get(key)
        if log is None:
            log = _LOGS[key] = RunLog(key)
        return log


@atexit.register
def _flush_all() -> None:
    for log in list(_LOGS.values()):
        with contextlib.suppress(Exception):  # never fail interpreter shutdown
            log.flush()
