"""Taking over the runs of a dead worker: heartbeats in the system database.

Every worker writes a heartbeat to the table ``tether.tether_workers`` (tether's own
schema of the system database, ``tether_schema`` in the settings) every
``takeover_after_s / 6`` seconds, from a thread of its own, with the database's clock. A
worker that finds a peer's heartbeat older than ``takeover_after_s`` recovers that peer's
unfinished runs through DBOS's public workflow management (see
:func:`tether_dbos.engine.recover_runs_of`): they go back to their queue, and whichever
worker dequeues them resumes them from their last recorded step.

Two live workers never recover the same peer at once: the takeover holds the peer's row
locked (``FOR UPDATE SKIP LOCKED``) while it recovers, and marks it taken over in the
same transaction, so a worker that dies mid-takeover leaves the row to the next one.
Recovery is idempotent: it only moves runs still ``PENDING`` under the dead worker's id,
and the queue hands each to exactly one worker.

A takeover that fails is recorded on the peer's row (``takeover_error``, shown by
``tether workers`` and :meth:`tether_dbos.DurableRuns.workers`), raised from
:meth:`Heartbeat.beat` as :class:`TakeoverError`, logged at ERROR once (not at every
beat) by the heartbeat thread, and tried again at every beat until it succeeds.

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from tether.errors import TetherError

__all__ = [
    "TABLE",
    "Heartbeat",
    "TakeoverError",
    "WorkerState",
    "WorkerStatus",
    "libpq_url",
    "prepare_table",
    "worker_statuses",
]

_log = logging.getLogger("tether_dbos")

TABLE = "tether_workers"
"""The heartbeat table's name, in tether's schema."""

WorkerState = Literal["alive", "stopped", "dead", "taken over"]


class TakeoverError(TetherError):
    """Live workers could not take over the runs of dead ones. Nothing was marked: the
    takeover is tried again at every heartbeat.

    :ivar failures: each dead worker's id, with what went wrong taking it over.
    :ivar taken: the workers taken over in the same beat nonetheless.
    """

    def __init__(self, failures: dict[str, str], taken: list[str]) -> None:
        self.failures = dict(failures)
        self.taken = list(taken)
        listed = "; ".join(f"{peer}: {why}" for peer, why in failures.items())
        super().__init__(
            f"Could not take over the runs of dead worker(s) ({listed}). Their runs stay "
            "where they are until a takeover succeeds (tried at every heartbeat) or a worker "
            "starts again with the dead one's --id; `tether workers` shows the state."
        )


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    """One worker as the heartbeat table knows it.

    ``state``: ``alive`` (beating), ``stopped`` (stopped cleanly, runs not yet taken
    over), ``dead`` (silent for longer than ``takeover_after_s``, runs not yet taken
    over), ``taken over`` (by ``taken_over_by``). ``takeover_error`` says why the last
    attempt to take it over failed (``None`` when none failed since).
    """

    executor_id: str
    state: WorkerState
    seconds_since_heartbeat: float | None
    started_at: datetime
    taken_over_by: str | None
    takeover_error: str | None
    takeover_failed_at: datetime | None


def libpq_url(url: str) -> str:
    """``url`` without a SQLAlchemy driver suffix (``postgresql+psycopg://``)."""
    from sqlalchemy import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def prepare_table(conn: Any, schema: str, *, dbos_schema: str) -> None:
    """Create tether's schema and its heartbeat table if they are missing (idempotent,
    safe from many workers at once), moving the table of earlier versions out of DBOS's
    schema ``dbos_schema`` if it is there and the new one is not. ``conn`` is an
    autocommit psycopg connection."""
    from psycopg import sql

    table = sql.Identifier(schema, TABLE)
    with conn.transaction():
        conn.execute(sql.SQL("SELECT pg_advisory_xact_lock(hashtext('tether_workers'))"))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        if dbos_schema != schema:
            old = sql.Identifier(dbos_schema, TABLE)
            found = conn.execute(
                sql.SQL("SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL"),
                (old.as_string(conn), table.as_string(conn)),
            ).fetchone()
            if found == (True, False):
                conn.execute(
                    sql.SQL("ALTER TABLE {} SET SCHEMA {}").format(old, sql.Identifier(schema))
                )
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (executor_id text PRIMARY KEY, "
                "heartbeat_at timestamptz NOT NULL, started_at timestamptz NOT NULL, "
                "taken_over_at timestamptz, taken_over_by text)"
            ).format(table)
        )
        conn.execute(
            sql.SQL(
                "ALTER TABLE {} ADD COLUMN IF NOT EXISTS takeover_error text, "
                "ADD COLUMN IF NOT EXISTS takeover_failed_at timestamptz"
            ).format(table)
        )


def worker_statuses(url: str, *, schema: str, takeover_after_s: float | None) -> list[WorkerStatus]:
    """Every worker in the heartbeat table of the database at ``url``, by id (none
    before the first worker started)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        libpq_url(url), autocommit=True, connect_timeout=10, application_name="tether_dbos"
    ) as conn:
        exists = conn.execute(
            sql.SQL("SELECT to_regclass(%s) IS NOT NULL"),
            (sql.Identifier(schema, TABLE).as_string(conn),),
        ).fetchone()
        if not exists or not exists[0]:
            return []
        rows = conn.execute(
            sql.SQL(
                "SELECT executor_id, CASE WHEN heartbeat_at = '-infinity' THEN NULL ELSE "
                "extract(epoch FROM now() - heartbeat_at)::float8 END, started_at, "
                "taken_over_at IS NOT NULL, taken_over_by, takeover_error, takeover_failed_at "
                "FROM {} ORDER BY executor_id"
            ).format(sql.Identifier(schema, TABLE))
        ).fetchall()
    statuses = []
    for executor_id, age, started, taken, by, error, failed_at in rows:
        state: WorkerState
        if taken:
            state = "taken over"
        elif age is None:
            state = "stopped"
        elif takeover_after_s is not None and age > takeover_after_s:
            state = "dead"
        else:
            state = "alive"
        statuses.append(WorkerStatus(executor_id, state, age, started, by, error, failed_at))
    return statuses


class Heartbeat:
    """This worker's heartbeat, and the takeover of peers whose heartbeat stopped.

    :param schema: tether's schema, where the heartbeat table lives.
    :param dbos_schema: DBOS's schema (where earlier versions kept the table).
    :param recover: recovers the unfinished runs of an executor id; returns how many it
        re-enqueued.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str,
        dbos_schema: str = "dbos",
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
        self._schema = schema
        self._dbos_schema = dbos_schema
        self._table = sql.Identifier(schema, TABLE)
        self._stop = threading.Event()
        self._takeover = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self._failing: dict[str, str] = {}
        self._beat_failure: str | None = None

    @property
    def takeover_failures(self) -> dict[str, str]:
        """The dead peers this worker's last beat failed to take over, with why."""
        return dict(self._failing)

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
        prepare_table(conn, self._schema, dbos_schema=self._dbos_schema)
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (executor_id, heartbeat_at, started_at) "
                "VALUES (%s, now(), now()) ON CONFLICT (executor_id) DO UPDATE SET "
                "heartbeat_at = now(), started_at = now(), taken_over_at = NULL, "
                "taken_over_by = NULL, takeover_error = NULL, takeover_failed_at = NULL"
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

                self._connection().execute(
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
        older than the timeout; the executor ids taken over.

        :raises TakeoverError: some peers could not be taken over (their rows record
            why; those taken over are in its ``taken``).
        """
        self._write_heartbeat()
        return self._take_over()

    def _write_heartbeat(self) -> None:
        from psycopg import sql

        conn = self._connection()
        with conn.transaction():
            row = conn.execute(
                sql.SQL(
                    "UPDATE {} SET heartbeat_at = now(), taken_over_at = NULL, "
                    "taken_over_by = NULL, takeover_error = NULL, takeover_failed_at = NULL "
                    "WHERE executor_id = %s "
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
        failures: dict[str, str] = {}
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
                try:
                    count = self._recover(peer)
                except Exception as exc:  # recorded on its row, raised below
                    failures[peer] = _describe(exc)
                    conn.execute(
                        sql.SQL(
                            "UPDATE {} SET takeover_error = %s, takeover_failed_at = now() "
                            "WHERE executor_id = %s"
                        ).format(self._table),
                        (f"{self.executor_id}: {failures[peer]}", peer),
                    )
                    continue
                conn.execute(
                    sql.SQL(
                        "UPDATE {} SET taken_over_at = now(), taken_over_by = %s, "
                        "takeover_error = NULL, takeover_failed_at = NULL WHERE executor_id = %s"
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
            self._note_failures(conn, failures)
        if failures:
            raise TakeoverError(failures, taken)
        return taken

    def _note_failures(self, conn: Any, failures: dict[str, str]) -> None:
        """Log each failing takeover at ERROR once, when it starts failing (or fails
        otherwise), not at every beat. A peer stays noted while it is dead and not taken
        over (in this beat another worker may have held it)."""
        from psycopg import sql

        for peer, why in failures.items():
            if self._failing.get(peer) != why:
                _log.error(
                    "Worker %s could not take over dead worker %s: %s. Its runs stay where "
                    "they are; trying again at every heartbeat (`tether workers` shows the "
                    "state).",
                    self.executor_id,
                    peer,
                    why,
                )
        earlier = [peer for peer in self._failing if peer not in failures]
        if earlier:
            rows = conn.execute(
                sql.SQL(
                    "SELECT executor_id FROM {} WHERE executor_id = ANY(%s) AND taken_over_at "
                    "IS NULL AND heartbeat_at < now() - make_interval(secs => %s)"
                ).format(self._table),
                (earlier, self.takeover_after_s),
            ).fetchall()
            still = {peer for (peer,) in rows}
            failures = {**{p: self._failing[p] for p in earlier if p in still}, **failures}
        self._failing = dict(failures)

    # -- plumbing -------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if self._takeover.is_set():
                    self.beat()
                else:
                    self._write_heartbeat()
            except TakeoverError:
                pass  # logged once, recorded on the peers' rows
            except Exception as exc:  # a database hiccup: try again at the next beat
                self._close()
                self._beat_failed(_describe(exc))
                continue
            if self._beat_failure is not None:
                _log.warning("Worker %s: heartbeat written again.", self.executor_id)
                self._beat_failure = None

    def _beat_failed(self, why: str) -> None:
        """Log a failed heartbeat once (not at every beat until it works again)."""
        if self._beat_failure is None:
            _log.warning(
                "Worker %s could not write its heartbeat (%s); trying again every %.1f s. "
                "Peers take its runs over if this lasts %s s.",
                self.executor_id,
                why,
                self.interval_s,
                self.takeover_after_s,
            )
        self._beat_failure = why

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
