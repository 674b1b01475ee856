"""Starting DBOS in a worker process: the system database, the queues, the workflow."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from dbos import DBOS, DBOSConfig

from tether.config import Config

from .runtime import WorkerRuntime, install
from .settings import DbosSettings
from .takeover import Heartbeat

__all__ = [
    "dbos_config",
    "default_executor_id",
    "recover_runs_of",
    "start_worker",
    "stop_worker",
]


APPLICATION_VERSION = "tether-1"
"""DBOS's application version of every worker: runs of one version are replayed by
workers of the same version only."""


def default_executor_id() -> str:
    """This machine's worker identity (restart a dead worker with the same id to resume
    the runs it had in hand)."""
    return f"{socket.gethostname()}-worker"


def dbos_config(config: Config, settings: DbosSettings, *, executor_id: str) -> DBOSConfig:
    url = settings.system_database_url(config)
    result: DBOSConfig = {
        "name": "tether",
        "system_database_url": url,
        "dbos_system_schema": settings.schema_name,
        "executor_id": executor_id,
        "log_level": settings.log_level,
        "notification_listener_polling_interval_sec": min(settings.poll_interval_s, 1.0),
        "application_version": APPLICATION_VERSION,
    }
    if url.startswith("postgres"):
        result["db_engine_kwargs"] = _engine_kwargs(settings)
    return result


def _engine_kwargs(settings: DbosSettings) -> dict[str, Any]:
    """SQLAlchemy settings of DBOS's PostgreSQL engine.

    DBOS checks every pooled connection with a round trip before handing it out; a step
    takes out three or four, so that is three or four extra round trips per model
    request or tool call. tether-dbos turns the check off: a connection that died while
    pooled (a database restart) fails its first statement, the pool drops every
    connection as old, and DBOS retries the operation on a fresh one (its database
    retry, which waits a second first). Connections are also replaced after
    ``pool_recycle`` seconds, before idle-connection timeouts of proxies cut them.
    """
    kwargs: dict[str, Any] = {
        "pool_size": 20,
        "max_overflow": 0,
        "pool_timeout": 30,
        "pool_pre_ping": False,
        "pool_recycle": 300,
        "connect_args": {"application_name": "tether_dbos"},
    }
    if not settings.synchronous_commit:
        kwargs["connect_args"]["options"] = "-c synchronous_commit=off"
    return kwargs


def start_worker(
    config: Config, *, executor_id: str | None = None, plugins: Sequence[object] = ()
) -> WorkerRuntime:
    """Launch DBOS in this process as a worker: it declares the queues, recovers the
    runs that ``executor_id`` left unfinished (a restart after a crash), and starts
    taking queued runs. On PostgreSQL it also starts its heartbeat, and takes over the
    runs of peers whose heartbeat stopped for ``takeover_after_s`` seconds. Call
    :func:`stop_worker` to end it."""
    from . import workflow  # noqa: F401  (registers the workflow before launch)

    settings = DbosSettings.from_config(config)
    runtime = WorkerRuntime(config, settings, plugins=plugins)
    install(runtime)
    name = executor_id or default_executor_id()
    url = settings.system_database_url(config)
    if settings.takeover_after_s is not None and url.startswith("postgres"):
        runtime.heartbeat = Heartbeat(
            url,
            schema=settings.tether_schema,
            dbos_schema=settings.schema_name,
            executor_id=name,
            takeover_after_s=settings.takeover_after_s,
            recover=recover_runs_of,
        )
        # Beating before DBOS takes any run: a peer must never find this id silent
        # (from its last life, or during a slow launch) and move runs it has begun.
        runtime.heartbeat.register()
        runtime.heartbeat.start()
    DBOS(config=dbos_config(config, settings, executor_id=name))
    DBOS.launch()
    for queue, options in settings.queues().items():
        DBOS.register_queue(queue, **options)
    if runtime.heartbeat is not None:
        runtime.heartbeat.allow_takeover()
    return runtime


def recover_runs_of(executor_id: str) -> int:
    """Send the unfinished runs of worker ``executor_id`` (a dead one) back to their
    queues, where any worker resumes them from their last recorded step; how many.

    DBOS's public workflow management does it: ``DBOS.list_workflows`` finds the runs
    still ``PENDING`` under that executor id (of this application version), and
    ``DBOS.resume_workflows`` puts them back on their own queue (their session partition
    kept). Safe to repeat: a run a live worker has dequeued again is no longer pending
    under the dead worker's id. Differences from DBOS's own recovery at startup (which is
    internal API): the runs' recovery-attempt counters restart from zero, and a run
    cancelled in the instant between the listing and the resume would be resumed.
    """
    pending = DBOS.list_workflows(
        status="PENDING",
        executor_id=executor_id,
        app_version=APPLICATION_VERSION,
        load_input=False,
        load_output=False,
    )
    by_queue: dict[str | None, list[str]] = {}
    for status in pending:
        by_queue.setdefault(status.queue_name, []).append(status.workflow_id)
    for queue, ids in by_queue.items():
        DBOS.resume_workflows(ids, queue_name=queue)
    return len(pending)


def stop_worker(runtime: WorkerRuntime | None = None, *, timeout: float = 10.0) -> None:
    """Stop taking runs and shut DBOS down, giving running runs ``timeout`` seconds to
    finish; the others are taken over by the other workers at their next heartbeat
    (or resume when a worker with the same executor id starts again). (The runtime's
    connections are left to the process's end: closing them first would fail the runs
    still finishing.)"""
    if runtime is not None and runtime.heartbeat is not None:
        runtime.heartbeat.allow_takeover(False)  # DBOS is going away; it still beats
    DBOS.destroy(workflow_completion_timeout_sec=int(timeout))
    if runtime is not None and runtime.heartbeat is not None:
        runtime.heartbeat.stop(release=True)
        runtime.heartbeat = None
