"""A run's trace over HTTP: the events the run streamed, and the run log's trace tree.

``GET /v1/runs/{id}/trace`` answers ``{"run", "events", "trace", "trace_note"}``:

- ``events``: every event of the run as it was streamed (:func:`tether.event_to_dict`),
  each with its ``seq`` (the SSE ``id``), from the server's memory while the run is
  retained (``retained_runs``);
- ``trace``: the run's tree exactly as ``tether trace RUN --json`` prints it (turns,
  model calls with latency and tokens, tool calls, retries, compactions, nested runs),
  for the tether run id of the run's ``run_start`` event, or ``null``;
- ``trace_note``: why ``trace`` is ``null``.

The tree comes from the ``tether trace`` command, run as a subprocess with a deadline:
the command is the run log's stable interface wherever the run log lives, and it reads
the same file the server's runs are recorded in (``TETHER_RUN_LOG``,
``[observers.runlog]``), or ``run_log`` of ``[serve]`` when given. The run log is
scrubbed of secrets before anything is written to it; the command's error text (which
names files) never reaches the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any

from .runs import RunRecord

__all__ = ["TraceReader"]

_OFF = {"off", "0", "false", "no"}
_CLI = "import sys; from tether_cli import main; sys.argv[0] = 'tether'; main()"


class TraceReader:
    """Reads runs' trace trees with ``tether trace RUN --json``.

    :param run_log: the run log file to read (``off``: none); ``None``: the one the
        server's environment and working directory give ``tether trace``.
    :param deadline_s: how long a trace may take (waiting for a slot included) before
        the command is killed.
    :param concurrency: how many commands run at once, for all requests together.
    """

    def __init__(
        self, run_log: str | None = None, *, deadline_s: float = 30.0, concurrency: int = 2
    ) -> None:
        self.run_log = os.path.expanduser(run_log) if run_log is not None else None
        self.deadline_s = deadline_s
        self._slots = asyncio.Semaphore(concurrency)

    @property
    def off(self) -> bool:
        chosen = self.run_log if self.run_log is not None else os.environ.get("TETHER_RUN_LOG")
        return chosen is not None and chosen.strip().lower() in _OFF

    async def trace(self, run: RunRecord) -> dict[str, Any]:
        """The trace document of ``run`` (see the module docstring)."""
        events = [{"seq": seq, **event} for seq, event in enumerate(list(run.events), 1)]
        tree, note = await self._tree(run)
        return {"run": run.summary(), "events": events, "trace": tree, "trace_note": note}

    async def _tree(self, run: RunRecord) -> tuple[dict[str, Any] | None, str | None]:
        if self.off:
            return None, "The run log is off; only the streamed events are available."
        tether_run = next(
            (e.get("run_id") for e in run.events if e.get("type") == "run_start"), None
        )
        if not isinstance(tether_run, str) or not tether_run:
            return None, "The run ended before it started; nothing was recorded."
        if not run.done:
            return None, "The run is still going; the run log records it when it ends."
        try:
            async with asyncio.timeout(self.deadline_s), self._slots:
                returncode, out = await self._run_trace(tether_run)
        except TimeoutError:
            return None, f"Reading the run log took over {self.deadline_s} s."
        if returncode != 0:
            return None, "The run log has no such run (yet): a run is recorded when it ends."
        try:
            tree = json.loads(out)
        except ValueError:
            return None, "The run log's trace could not be read."
        if not isinstance(tree, dict) or not str(tree.get("title", "")).startswith(
            f"run {tether_run[:12]}"
        ):
            return None, "The run log has no such run (yet): a run is recorded when it ends."
        return tree, None

    async def _run_trace(self, tether_run: str) -> tuple[int | None, bytes]:
        """``tether trace RUN --json``: its exit code and output; killed when the caller
        gives up (deadline, or the request went away)."""
        env = dict(os.environ)
        if self.run_log is not None:
            env["TETHER_RUN_LOG"] = self.run_log
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _CLI,
            "trace",
            tether_run,
            "--json",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            out, _ = await process.communicate()
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                with contextlib.suppress(Exception):
                    await asyncio.shield(process.wait())
        return process.returncode, out
