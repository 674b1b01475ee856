"""Fixtures of the durable-run tests: a PostgreSQL database of their own (sessions and
DBOS's system tables), a configuration naming it, and worker processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tether.config import Config, load_config
from tether_postgres.testing import temporary_database

HERE = Path(__file__).parent
TETHER = Path(sys.executable).with_name("tether")


@dataclass
class Deployment:
    """One test's database, configuration file and worker processes."""

    root: Path
    url: str
    config_path: Path
    env: dict[str, str]
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def config(self) -> Config:
        return load_config(self.config_path)

    def start(self, name: str) -> subprocess.Popen[bytes]:
        """Start ``tether worker --id NAME`` (its output goes to ``<root>/NAME.log``)."""
        log = (self.root / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [str(TETHER), "worker", "--id", name], env=self.env, stdout=log, stderr=log
        )
        self.workers[name] = process
        return process

    def kill(self, name: str) -> None:
        """SIGKILL worker ``name``: no cleanup, no chance to record anything."""
        process = self.workers[name]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def worker_with_pid(self, pid: int) -> str:
        for name, process in self.workers.items():
            if process.pid == pid and process.poll() is None:
                return name
        raise AssertionError(f"no live worker has pid {pid}")

    def holder(self, kind: str, task: int) -> int | None:
        """The pid of the live process inside step ``kind`` (``model`` or ``tool``) of
        ``task``, from the marker ``durable_agents`` writes there, if one is there."""
        for path in (self.root / "markers").glob(f"{kind}-task_{task}.*"):
            return int(path.suffix[1:])
        return None

    def lines(self, name: str) -> list[list[str]]:
        """The tab-separated fields of each line of ``<root>/NAME`` (``ledger``,
        ``invocations``, ``model_calls``); none before the file exists."""
        path = self.root / name
        if not path.exists():
            return []
        return [line.split("\t") for line in path.read_text().splitlines()]

    @staticmethod
    def prompt(index: int, slow_tool: int, slow_model: int) -> str:
        """The prompt of task ``index``: ``slow-tool`` or ``slow-model`` when it is the
        task whose tool or first model call waits for its release marker."""
        if index == slow_tool:
            return f"task {index} slow-tool"
        if index == slow_model:
            return f"task {index} slow-model"
        return f"task {index}"

    async def submit_tasks(
        self, runs: Any, count: int, slow_tool: int, slow_model: int, agent: str
    ) -> list[Any]:
        """Submit tasks ``0 .. count-1`` to ``runs`` (a ``DurableRuns``), each in a
        conversation of its own, then start workers ``w1``-``w3``; the run handles."""
        handles = [
            await runs.submit(
                self.prompt(i, slow_tool, slow_model), agent=agent, session=f"conversation-{i}"
            )
            for i in range(count)
        ]
        for name in ("w1", "w2", "w3"):
            self.start(name)
        return handles

    @staticmethod
    def wait_for(predicate: Callable[[], object], *, timeout: float, what: str) -> object:
        """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def stop_all(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 15
        for process in self.workers.values():
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


@contextlib.contextmanager
def _deployment(root: Path, settings: str = "") -> Iterator[Deployment]:
    with temporary_database(prefix="tether_durable") as url:
        config_path = root / "tether.toml"
        config_path.write_text(
            "[sessions]\n"
            'store = "postgres"\n'
            f'settings = {{ dsn = "{url}" }}\n'
            "[durable]\n"
            'engine = "dbos"\n'
            f'settings = {{ database_url = "{url}", poll_interval_s = 0.05, worker_concurrency = 8'
            f"{settings} }}\n"
        )
        env = dict(os.environ)
        env.update(
            TETHER_CONFIG=str(config_path),
            TETHER_DATA_DIR=str(root / "data"),
            DURABLE_TEST_DIR=str(root),
            PYTHONPATH=os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]),
        )
        deployment = Deployment(root, url, config_path, env)
        try:
            yield deployment
        finally:
            deployment.stop_all()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    """A fresh database and configuration; start workers with ``deployment.start``."""
    with _deployment(tmp_path) as deployment:
        yield deployment


@pytest.fixture
def takeover_deployment(tmp_path: Path) -> Iterator[Deployment]:
    """Like ``deployment``, with workers declared dead after 2 s without a heartbeat."""
    with _deployment(tmp_path, ", takeover_after_s = 2") as deployment:
        yield deployment


@pytest.fixture(scope="module")
def shared_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """One database and one running worker (``w1``) for a whole test module."""
    with _deployment(tmp_path_factory.mktemp("durable")) as deployment:
        deployment.start("w1")
        yield deployment
