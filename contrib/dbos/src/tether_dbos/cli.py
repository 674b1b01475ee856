"""``tether worker`` and ``tether submit``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from typing import TYPE_CHECKING

import click

from tether_cli import pass_state

if TYPE_CHECKING:
    from tether_cli import CliState

__all__ = ["submit", "worker", "workers"]


@click.command("worker")
@click.option(
    "--id",
    "executor_id",
    help="This worker's identity (default: HOSTNAME-worker), unique among live workers. "
    "A worker restarted with the same id resumes the runs it had in hand at once.",
)
@pass_state
def worker(state: CliState, executor_id: str | None) -> None:
    """Execute queued durable runs until stopped (SIGTERM or Ctrl-C).

    Every worker sharing the [durable] settings database takes runs from the same
    queues. The runs a worker leaves unfinished (stopped or killed) are taken over by
    the other workers once its heartbeat has stopped for takeover_after_s (at once after
    a clean stop), or resume when a worker with the same --id starts again.
    """
    from .engine import default_executor_id, start_worker, stop_worker

    config = state.config()
    if config.durable.engine not in (None, "dbos"):
        raise click.UsageError(f'[durable] engine is "{config.durable.engine}", not "dbos".')
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    name = executor_id or default_executor_id()
    runtime = start_worker(config, executor_id=name, plugins=state.plugin_objects())
    click.echo(f"worker {name} ready", err=True)
    try:
        stop.wait()
    finally:
        click.echo(f"worker {name} stopping", err=True)
        stop_worker(runtime)


@click.command("submit")
@click.argument("prompt")
@click.option(
    "-s", "--session", help="Session to continue (default: a new one named after the run)."
)
@click.option("--agent", help='Agent factory on the workers: "package.module:function".')
@click.option("-m", "--model", help="Model for the run (default: the workers' configuration).")
@click.option(
    "--follow/--no-follow",
    default=True,
    show_default=True,
    help="Stream the run's events and wait for its result.",
)
@click.option("--json", "as_json", is_flag=True, help="Print events as JSON lines.")
@pass_state
def submit(
    state: CliState,
    prompt: str,
    session: str | None,
    agent: str | None,
    model: str | None,
    follow: bool,
    as_json: bool,
) -> None:
    """Queue PROMPT as a durable run for `tether worker` processes; print its id.

    With --follow (the default) the run's text streams to stdout as the worker produces
    it, and the command ends with the run.
    """
    asyncio.run(_submit(state, prompt, session, agent, model, follow, as_json))


async def _submit(
    state: CliState,
    prompt: str,
    session: str | None,
    agent: str | None,
    model: str | None,
    follow: bool,
    as_json: bool,
) -> None:
    from .client import DurableRuns

    async with DurableRuns(state.config()) as runs:
        handle = await runs.submit(prompt, session=session, agent=agent, model=model)
        click.echo(handle.run_id, err=not as_json and follow)
        if not follow:
            return
        async for event in handle.events():
            if as_json:
                click.echo(json.dumps(event))
            elif event.get("type") == "text_delta":
                sys.stdout.write(str(event.get("text", "")))
                sys.stdout.flush()
            elif event.get("type") == "retry":
                click.echo("\n[retrying]", err=True)
        result = await handle.result()
        if not as_json:
            if result.output and not result.output.endswith("\n"):
                click.echo()
            click.echo(
                f"[{result.outcome}] {result.turns} turns, {result.tool_calls} tool calls", err=True
            )


@click.command("workers")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per worker.")
@pass_state
def workers(state: CliState, as_json: bool) -> None:
    """List the workers of the [durable] settings database and their state.

    A worker is alive, stopped (cleanly; its runs are taken over at the peers' next
    heartbeat), dead (silent for longer than takeover_after_s) or taken over. When live
    workers could not take a dead one over, its line says why, and the command exits
    with status 1.
    """
    from .settings import DbosSettings
    from .takeover import worker_statuses

    config = state.config()
    settings = DbosSettings.from_config(config)
    url = settings.system_database_url(config)
    if not url.startswith("postgres"):
        raise click.UsageError(
            "Worker heartbeats need a PostgreSQL system database ([durable.settings] "
            "database_url); with SQLite, workers share one machine and are not tracked."
        )
    statuses = worker_statuses(
        url, schema=settings.tether_schema, takeover_after_s=settings.takeover_after_s
    )
    failing = [s for s in statuses if s.takeover_error is not None and s.state != "taken over"]
    for status in statuses:
        beat = (
            "-"
            if status.seconds_since_heartbeat is None
            else f"{status.seconds_since_heartbeat:.1f} s ago"
        )
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "executor_id": status.executor_id,
                        "state": status.state,
                        "seconds_since_heartbeat": status.seconds_since_heartbeat,
                        "taken_over_by": status.taken_over_by,
                        "takeover_error": status.takeover_error,
                    }
                )
            )
            continue
        line = f"{status.executor_id}  {status.state}  last heartbeat {beat}"
        if status.taken_over_by:
            line += f"  taken over by {status.taken_over_by}"
        if status.takeover_error and status.state != "taken over":
            line += f"  TAKEOVER FAILING: {status.takeover_error}"
        click.echo(line)
    if not statuses and not as_json:
        click.echo("no workers have run on this database", err=True)
    if failing:
        click.echo(
            f"{len(failing)} dead worker(s) could not be taken over; their runs wait. Fix the "
            "cause shown, or start a worker with the dead one's --id.",
            err=True,
        )
        raise SystemExit(1)
