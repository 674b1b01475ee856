"""The ``[durable] settings`` of tether-dbos."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tether.config import Config, data_dir
from tether.errors import ConfigError

__all__ = ["DEFAULT_QUEUE", "DbosSettings", "ProviderLimits"]

DEFAULT_QUEUE = "tether-runs"
DEFAULT_URL_ENV = "TETHER_DBOS_DATABASE_URL"


class ProviderLimits(BaseModel):
    """Limits for the runs of one provider, shared by every worker (``[durable.settings.
    providers.<name>]``): at most ``concurrency`` of its runs at once, and at most
    ``runs_per_period`` run starts in any ``period_s`` seconds."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int | None = Field(None, ge=1)
    runs_per_period: int | None = Field(None, ge=1)
    period_s: float = Field(60.0, gt=0)


class DbosSettings(BaseModel):
    """Settings of durable runs on DBOS (the ``[durable] settings`` table).

    ``database_url`` (or the variable ``database_url_env``, default
    ``TETHER_DBOS_DATABASE_URL``) is DBOS's system database: ``postgresql://...`` for
    workers on many machines; without one, a SQLite file in the data directory (one
    machine). ``worker_concurrency`` caps the runs one worker executes at once;
    ``providers`` caps runs per provider across all workers. ``poll_interval_s`` is how
    often an idle worker looks for queued runs. ``deltas`` publishes text deltas to the
    run's event stream (in batches, one database write each). ``synchronous_commit =
    false`` lets PostgreSQL acknowledge step checkpoints before they reach the disk:
    steps get several times cheaper, a worker crash still loses nothing, but a crash of
    the database server itself can lose the last fraction of a second of checkpoints,
    whose steps then run again (tools that deduplicate on their idempotency key still
    act once). ``takeover_after_s`` (PostgreSQL only): a worker whose heartbeat (written
    every sixth of it) stops for that long is declared dead and a live worker takes
    over its unfinished runs; ``false`` turns takeover off (a dead worker's runs then
    wait for a worker with its ``--id``). ``schema`` is DBOS's schema of the system
    database; ``tether_schema`` is tether's own (its heartbeat table, ``tether_workers``).
    """

    model_config = ConfigDict(extra="forbid")

    database_url: str | None = None
    database_url_env: str = DEFAULT_URL_ENV
    schema_name: str = Field("dbos", alias="schema")
    tether_schema: str = "tether"
    queue: str = DEFAULT_QUEUE
    worker_concurrency: int = Field(16, ge=1)
    poll_interval_s: float = Field(0.2, ge=0.01)
    providers: dict[str, ProviderLimits] = Field(default_factory=dict)
    deltas: bool = True
    synchronous_commit: bool = True
    takeover_after_s: float | None = Field(30.0, gt=0)
    log_level: str = "WARNING"

    @classmethod
    def from_config(cls, config: Config) -> DbosSettings:
        data = dict(config.durable.settings)
        if data.get("takeover_after_s") is False:
            data["takeover_after_s"] = None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = []
            for err in exc.errors(include_url=False):
                key = ".".join(str(p) for p in err["loc"])
                problems.append(
                    f"unknown key '{key}'"
                    if err["type"] == "extra_forbidden"
                    else f"'{key}': {err['msg']}"
                )
            raise ConfigError(
                "[durable] settings: " + "; ".join(problems) + ". See docs/scaling.md for the keys."
            ) from None

    def system_database_url(self, config: Config) -> str:
        """DBOS's system database: the setting, the environment, or a SQLite file."""
        url = self.database_url or os.environ.get(self.database_url_env)
        if url:
            return url
        path = data_dir(config) / "dbos.sqlite3"
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"

    def queue_for(self, provider: str | None) -> str:
        """The queue a run of ``provider`` goes to: its own when it has limits."""
        if provider is not None and provider in self.providers:
            return f"{self.queue}-{provider}"
        return self.queue

    def queues(self) -> dict[str, dict[str, Any]]:
        """Every queue with its DBOS options (``register_queue`` keywords)."""
        base: dict[str, Any] = {
            "worker_concurrency": self.worker_concurrency,
            "partition_concurrency": 1,  # one run at a time per session
            "polling_interval_sec": self.poll_interval_s,
        }
        queues = {self.queue: dict(base)}
        for name, limits in self.providers.items():
            options = dict(base)
            if limits.concurrency is not None:
                options["global_concurrency"] = limits.concurrency
            if limits.runs_per_period is not None:
                options["limiter"] = {"limit": limits.runs_per_period, "period": limits.period_s}
            queues[self.queue_for(name)] = options
        return queues
