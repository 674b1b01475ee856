"""A takeover that fails is seen: raised from ``Heartbeat.beat``, logged at ERROR once by
the heartbeat thread (not at every beat), recorded on the dead worker's row and shown by
``tether workers`` (exit status 1) and ``DurableRuns.workers()``; it clears once a
takeover succeeds. And the heartbeat table lives in tether's schema, moved there from
DBOS's schema where earlier versions kept it."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tether.config import load_config
from tether_dbos import DurableRuns, TakeoverError
from tether_dbos.takeover import Heartbeat, worker_statuses
from tether_postgres.testing import temporary_database

TETHER = Path(sys.executable).with_name("tether")


class FlakyRecovery:
    """Recovers nothing and fails until ``works`` is set; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.works = threading.Event()

    def __call__(self, peer: str) -> int:
        self.calls += 1
        if not self.works.is_set():
            raise RuntimeError(f"could not resume the runs of {peer}")
        return 0


def _silence(url: str, name: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(
            "UPDATE tether.tether_workers SET heartbeat_at = now() - interval '1 hour' "
            "WHERE executor_id = %s",
            (name,),
        )


def _cli(root: Path, url: str) -> subprocess.CompletedProcess[str]:
    config = root / "tether.toml"
    config.write_text(f'[durable]\nengine = "dbos"\nsettings = {{ database_url = "{url}" }}\n')
    env = dict(os.environ, TETHER_CONFIG=str(config), TETHER_DATA_DIR=str(root / "data"))
    return subprocess.run(
        [str(TETHER), "workers"], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_failed_takeover_is_raised_recorded_shown_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tether_dbos")
    with temporary_database(prefix="tether_takeover_status") as url:
        recovery = FlakyRecovery()
        dead = Heartbeat(url, schema="tether", executor_id="dead", takeover_after_s=60,
                         recover=FlakyRecovery())  # fmt: skip
        live = Heartbeat(url, schema="tether", executor_id="live", takeover_after_s=0.3,
                         recover=recovery)  # fmt: skip
        dead.register()
        live.register()
        _silence(url, "dead")
        try:
            with pytest.raises(TakeoverError) as raised:  # to a caller of beat()
                live.beat()
            assert raised.value.failures == {
                "dead": "RuntimeError: could not resume the runs of dead"
            }
            assert "tether workers" in str(raised.value)

            live.allow_takeover()
            live.start()  # beats every 0.05 s, failing the takeover at each one
            deadline = time.monotonic() + 30
            while recovery.calls < 6 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert recovery.calls >= 6
            errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
            assert len(errors) == 1  # logged once, not at every beat
            assert "could not take over dead worker dead" in errors[0].getMessage()
            assert live.takeover_failures == {
                "dead": "RuntimeError: could not resume the runs of dead"
            }

            (status,) = [s for s in worker_statuses(url, schema="tether", takeover_after_s=0.3)
                         if s.executor_id == "dead"]  # fmt: skip
            assert status.state == "dead"
            assert status.takeover_error == "live: RuntimeError: could not resume the runs of dead"
            shown = _cli(tmp_path, url)
            assert shown.returncode == 1, shown.stderr
            assert "dead  dead" in shown.stdout and "TAKEOVER FAILING" in shown.stdout
            assert "live  alive" in shown.stdout

            async def listed() -> dict[str, str | None]:
                async with DurableRuns(load_config(tmp_path / "tether.toml")) as runs:
                    return {w.executor_id: w.takeover_error for w in await runs.workers()}

            assert asyncio.run(listed())["dead"] is not None

            recovery.works.set()  # the cause is fixed: the next beat takes the peer over
            deadline = time.monotonic() + 30
            while live.takeover_failures and time.monotonic() < deadline:
                time.sleep(0.02)
            assert live.takeover_failures == {}
            (status,) = [s for s in worker_statuses(url, schema="tether", takeover_after_s=0.3)
                         if s.executor_id == "dead"]  # fmt: skip
            assert (status.state, status.taken_over_by, status.takeover_error) == (
                "taken over", "live", None,
            )  # fmt: skip
            shown = _cli(tmp_path, url)
            assert shown.returncode == 0, shown.stderr
            assert "dead  taken over" in shown.stdout and "FAILING" not in shown.stdout
            assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
        finally:
            live.stop(release=False)
            dead.stop(release=False)


def test_the_heartbeat_table_moves_from_dbos_schema_to_tethers() -> None:
    with temporary_database(prefix="tether_takeover_move") as url:
        with psycopg.connect(url, autocommit=True) as conn:  # as earlier versions left it
            conn.execute("CREATE SCHEMA dbos")
            conn.execute(
                "CREATE TABLE dbos.tether_workers (executor_id text PRIMARY KEY, "
                "heartbeat_at timestamptz NOT NULL, started_at timestamptz NOT NULL, "
                "taken_over_at timestamptz, taken_over_by text)"
            )
            conn.execute(
                "INSERT INTO dbos.tether_workers VALUES "
                "('old-worker', now() - interval '1 hour', now() - interval '2 hours', NULL, NULL)"
            )
        recovered: list[str] = []

        def recover(peer: str) -> int:
            recovered.append(peer)
            return 1

        new = Heartbeat(url, schema="tether", dbos_schema="dbos", executor_id="new",
                        takeover_after_s=60, recover=recover)  # fmt: skip
        again = Heartbeat(url, schema="tether", dbos_schema="dbos", executor_id="again",
                          takeover_after_s=60, recover=recover)  # fmt: skip
        try:
            new.register()
            again.register()  # idempotent
            with psycopg.connect(url) as conn:
                tables = conn.execute(
                    "SELECT to_regclass('dbos.tether_workers'), "
                    "to_regclass('tether.tether_workers')::text"
                ).fetchone()
                ids = conn.execute(
                    "SELECT executor_id FROM tether.tether_workers ORDER BY 1"
                ).fetchall()
            assert tables == (None, "tether.tether_workers")
            assert ids == [("again",), ("new",), ("old-worker",)]
            assert new.beat() == ["old-worker"]  # the moved rows are live data
            assert recovered == ["old-worker"]
        finally:
            new.stop(release=False)
            again.stop(release=False)
