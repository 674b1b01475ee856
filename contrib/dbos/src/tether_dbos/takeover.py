"""Taking over the runs of a dead worker: heartbeats in the system database.

Every worker writes a heartbeat to the table ``tether_workers`` (in DBOS's schema of the
system database) every ``takeover_after_s / 6`` seconds, from a thread of its own, with
the database's clock. A worker that finds a peer's heartbeat older than
``takeover_after_s`` recovers that peer's unfinished runs through DBOS's workflow
recovery: they go back to their queue, and whichever worker dequeues them resumes them
from their last recorded step.

Two live workers never recover the same peer at once: the takeover holds the peer's row
locked (``FOR UPDATE SKIP LOCKED``) while it recovers, and marks it taken over in the
same transaction, so a worker that dies mid-takeover leaves the row to the next one.
DBOS's recovery is itself idempotent: it only re-enqueues runs still ``PENDING`` under
the dead worker's id, and the queue hands each to exactly one worker.

A worker that was only late (a pause longer than the timeout) finds its row marked on
its next heartbeat and logs it; the runs it was executing have moved, and its own
executions of them stop at their next step (DBOS refuses a checkpoint from an execution
that no longer owns the run), so at most the step in flight runs twice, as after a
crash.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Heartbeat", "libpq_url"]

_log = logging.getLogger("tether_dbos")


def libpq_url(url: str) -> str:
    """``url`` without a SQLAlchemy driver suffix (``postgresql+psycopg://``)."""
    from sqlalchemy import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Heartbeat:
    """This worker's heartbeat, and the takeover of peers whose heartbeat stopped.

    :param recover: recovers the unfinished runs of an executor id (DBOS's recovery);
        returns how many it re-enqueued.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str,
        executor_id: str,
        takeover_after_s: float,
        recover: Callable[[str], int],
    ) -> None:
        from psycopg import sql

        self._url = libpq_url(url)
        self.executor_id = executor_id
        self.takeover_after_s = takeover_after_s
        self.interval_s = max(takeover_after_s / 6, 0.05)
        self._recover = recover
        self._table = sql.Identifier(schema, "tether_workers")
        self._schema = sql.Identifier(schema)
        self._stop = threading.Event()
        self._takeover = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: Any = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Start beating (after :meth:`register`); peers are taken over only between
        :meth:`allow_takeover` and :meth:`stop` (DBOS must be running to recover them)."""
        self._thread = threading.Thread(target=self._run, name="tether-heartbeat", daemon=True)
        self._thread.start()

    def register(self) -> None:
        """Create the table if needed and write this worker's first heartbeat, clearing
        a takeover mark left from its previous life."""
        from psycopg import sql

        conn = self._connection()
        with conn.transaction():
            conn.execute(sql.SQL("SELECT pg_advisory_xact_lock(hashtext('tether_workers'))"))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(self._schema))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (executor_id text PRIMARY KEY, "
                    "heartbeat_at timestamptz NOT NULL, started_at timestamptz NOT NULL, "
                    "taken_over_at timestamptz, taken_over_by text)"
                ).format(self._table)
            )
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (executor_id, heartbeat_at, started_at) "
                    "VALUES (%s, now(), now()) ON CONFLICT (executor_id) DO UPDATE SET "
                    "heartbeat_at = now(), started_at = now(), taken_over_at = NULL, "
                    "taken_over_by = NULL"
                ).format(self._table),
                (self.executor_id,),
            )

    def allow_takeover(self, allowed: bool = True) -> None:
        """Whether the beats also take over silent peers."""
        if allowed:
            self._takeover.set()
        else:
            self._takeover.clear()

    def stop(self, *, release: bool = True) -> None:
        """Stop beating. With ``release``, mark this worker gone at once, so peers take
        over the runs it leaves unfinished at their next heartbeat (not after the
        timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 15)
        try:
            if release:
                from psycopg import sql

                with self._connection().transaction() as tx:
                    tx.connection.execute(
                        sql.SQL(
                            "UPDATE {} SET heartbeat_at = '-infinity' WHERE executor_id = %s"
                        ).format(self._table),
                        (self.executor_id,),
                    )
        except Exception as exc:  # the peers take over after the timeout instead
            _log.warning("Could not mark worker %s stopped: %s", self.executor_id, _describe(exc))
        finally:
            self._close()

    # -- one round ------------------------------------------------------------------------
    def beat(self) -> list[str]:
        """Write this worker's heartbeat, then take over every peer whose heartbeat is
        older than the timeout; the executor ids taken over."""
        self._write_heartbeat()
        return self._take_over()

    def _write_heartbeat(self) -> None:
        from psycopg import sql

        conn = self._connection()
        with conn.transaction():
            row = conn.execute(
                sql.SQL(
                    "UPDATE {} SET heartbeat_at = now(), taken_over_at = NULL, "
                    "taken_over_by = NULL WHERE executor_id = %s "
                    "RETURNING (SELECT taken_over_by FROM {} WHERE executor_id = %s)"
                ).format(self._table, self._table),
                (self.executor_id, self.executor_id),
            ).fetchone()
            if row is None:  # the row was deleted: register again
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {} (executor_id, heartbeat_at, started_at) "
                        "VALUES (%s, now(), now()) ON CONFLICT (executor_id) DO NOTHING"
                    ).format(self._table),
                    (self.executor_id,),
                )
        if row is not None and row[0] is not None:
            _log.warning(
                "Worker %s was taken over by %s: its heartbeat was more than %s s late. The "
                "runs it was executing continue on other workers; its own executions of "
                "them stop at their next step.",
                self.executor_id,
                row[0],
                self.takeover_after_s,
            )

    def _take_over(self) -> list[str]:
        from psycopg import sql

        conn = self._connection()
        taken: list[str] = []
        with conn.transaction():
            rows = conn.execute(
                sql.SQL(
                    "SELECT executor_id FROM {} WHERE executor_id <> %s AND taken_over_at IS "
                    "NULL AND heartbeat_at < now() - make_interval(secs => %s) "
                    "ORDER BY heartbeat_at FOR UPDATE SKIP LOCKED"
                ).format(self._table),
                (self.executor_id, self.takeover_after_s),
            ).fetchall()
            for (peer,) in rows:
                count = self._recover(peer)
                conn.execute(
                    sql.SQL(
                        "UPDATE {} SET taken_over_at = now(), taken_over_by = %s "
                        "WHERE executor_id = %s"
                    ).format(self._table),
                    (self.executor_id, peer),
                )
                _log.warning(
                    "Worker %s took over worker %s (no heartbeat for %s s): %d run(s) re-enqueued.",
                    self.executor_id,
                    peer,
                    self.takeover_after_s,
                    count,
                )
                taken.append(peer)
        return taken

    # -- plumbing -------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if self._takeover.is_set():
                    self.beat()
                else:
                    self._write_heartbeat()
            except Exception as exc:  # a database hiccup: try again at the next beat
                _log.warning("Worker heartbeat failed: %s", _describe(exc))
                self._close()

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self._url, autocommit=True, connect_timeout=10, application_name="tether_dbos"
            )
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


def _describe(exc: BaseException) -> str:
    """The error's kind and first line (a connection string never appears in it)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
