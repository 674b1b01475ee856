"""Submitting durable runs and following them: :class:`DurableRuns` and :class:`RunHandle`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from tether import PluginManager, RunResult
from tether.config import Config, load_config
from tether.errors import ConfigError, RunCancelled, TetherError
from tether.messages import Block, Message, TextBlock, new_id
from tether.resolve import parse_model_string
from tether.sessions import validate_session_name

from .journal import EVENTS
from .settings import DbosSettings
from .spec import RunSpec
from .takeover import WorkerStatus, worker_statuses
from .workflow import APPROVAL, END, REPLY, WORKFLOW

__all__ = ["DurableRuns", "RunHandle"]


class DurableRuns:
    """Enqueue runs for ``tether worker`` processes and follow them.

    Talks only to DBOS's system database (through ``DBOSClient``): a web server or a
    script can submit runs without running any itself. Use as an async context manager,
    or call :meth:`aclose`.

    :param config: the configuration whose ``[durable] settings`` name the database
        (loaded from ``tether.toml`` when omitted). Workers must use the same.
    """

    def __init__(self, config: Config | None = None) -> None:
        from dbos import DBOS, DBOSClient

        self.config = config if config is not None else load_config()
        self.settings = DbosSettings.from_config(self.config)
        url = self.settings.system_database_url(self.config)
        DBOS.migrate(
            url, schema=self.settings.schema_name
        )  # so runs can be queued before any worker starts
        self._client = DBOSClient(
            system_database_url=url, dbos_system_schema=self.settings.schema_name
        )

    async def submit(
        self,
        prompt: str | Message | Sequence[Block],
        *,
        session: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        system: str | None = None,
        tools: Sequence[str] | None = None,
        limits: dict[str, Any] | None = None,
        wait_for_reply_s: float | None = None,
        run_id: str | None = None,
    ) -> RunHandle:
        """Queue one run and return its handle at once.

        :param session: the conversation to continue (a name in the workers' session
            store); a new one named after the run when omitted. Runs on one session never
            execute at the same time: they queue behind each other.
        :param agent: ``"package.module:function"`` building the agent on the worker;
            otherwise ``model``/``system``/``tools`` over the workers' configuration.
        :param run_id: an id of your choosing (submitting the same id twice returns the
            first run); a fresh one when omitted.
        """
        run_id = run_id or f"run-{new_id()[:16]}"
        name = validate_session_name(session or run_id)
        spec = RunSpec(
            session=name,
            prompt=_as_message(prompt).to_json(),
            agent=agent,
            model=model,
            system=system,
            tools=list(tools) if tools is not None else None,
            limits=dict(limits or {}),
            wait_for_reply_s=wait_for_reply_s,
        )
        queue = self.settings.queue_for(self._provider_of(model or self.config.model))
        await self._client.enqueue_async(
            {
                "workflow_name": WORKFLOW,
                "queue_name": queue,
                "workflow_id": run_id,
                "queue_partition_key": name,
            },
            spec.model_dump(),
        )
        return RunHandle(self, run_id)

    async def workers(self) -> list[WorkerStatus]:
        """Every worker that has run on this database, by id, as its heartbeat table
        knows it: alive, stopped, dead or taken over, and why the last attempt to take a
        dead one over failed, if it did (``takeover_error``). Empty on SQLite (no
        heartbeats there)."""
        url = self.settings.system_database_url(self.config)
        if not url.startswith("postgres"):
            return []
        return await asyncio.to_thread(
            worker_statuses,
            url,
            schema=self.settings.tether_schema,
            takeover_after_s=self.settings.takeover_after_s,
        )

    def handle(self, run_id: str) -> RunHandle:
        """The handle of a run submitted earlier (by this process or another)."""
        return RunHandle(self, run_id)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._client.destroy)

    async def __aenter__(self) -> DurableRuns:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _provider_of(self, model: str | None) -> str | None:
        if model is None or not self.settings.providers:
            return None
        if "/" in model:
            return model.split("/", 1)[0]
        try:
            return parse_model_string(
                model, PluginManager().providers, self.config.aliases
            ).provider
        except TetherError:
            return None


class RunHandle:
    """A submitted run: follow its events, wait for its result, reply, cancel."""

    def __init__(self, runs: DurableRuns, run_id: str) -> None:
        self.runs = runs
        self.run_id = run_id

    async def events(self, *, idle_timeout_s: float | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every event of the run as a JSON-ready dict (:func:`tether.events.event_to_dict`),
        from the start, until the run ends. Deltas that a crashed worker streamed before
        its model step was recorded are followed by ``{"type": "retry", "reason": ...}``
        (discard them, as after any retry), then the step's deltas again.

        :param idle_timeout_s: seconds to wait for each next event before raising
            ``TimeoutError`` (``None``: wait as long as the run lasts).
        """
        from dbos import error as dbos_error

        steps: set[int] = set()
        last_seq = 0
        stream = self.runs._client.read_stream_async(
            self.run_id, EVENTS, polling_interval_sec=0.05, timeout_seconds=idle_timeout_s
        )
        try:
            async for batch in stream:
                for value in batch if isinstance(batch, list) else [batch]:
                    seq = value.pop("seq", None)
                    if seq is not None:
                        if seq <= last_seq:
                            continue  # published again by a re-executed step
                        last_seq = seq
                    if value.get("type") == "model_step":
                        step = int(value.get("step") or 0)
                        if step in steps:
                            yield {
                                "type": "retry",
                                "reason": "the worker running this model call stopped; it was run again",
                            }
                        steps.add(step)
                        continue
                    yield value
        except dbos_error.DBOSStreamTimeoutError as exc:
            raise TimeoutError(
                f"No event from run {self.run_id} within {idle_timeout_s} s."
            ) from exc
        finally:
            await stream.aclose()

    async def result(self) -> RunResult:
        """Wait for the run to end and return its :class:`~tether.result.RunResult`
        (bound the wait with ``asyncio.timeout`` if you need to).

        :raises RunCancelled: the run was cancelled.
        :raises TetherError: what ended the run, e.g. ``SessionConflictError``.
        """
        from dbos import error as dbos_error

        handle: Any = await self.runs._client.retrieve_workflow_async(self.run_id)
        try:
            result: RunResult = await handle.get_result(polling_interval_sec=0.05)
        except dbos_error.DBOSAwaitedWorkflowCancelledError as exc:
            raise RunCancelled(f"Run {self.run_id} was cancelled.") from exc
        return result

    async def status(self) -> str:
        """``ENQUEUED``, ``PENDING`` (running), ``SUCCESS``, ``ERROR`` or ``CANCELLED``."""
        handle: Any = await self.runs._client.retrieve_workflow_async(self.run_id)
        status = await handle.get_status()
        return str(status.status)

    async def reply(self, text: str | Message) -> None:
        """Send the next user message to a run waiting for one (``wait_for_reply_s``).
        The run answers it and waits again, until :meth:`end` or the wait runs out."""
        await self.runs._client.send_async(self.run_id, _as_message(text).to_json(), REPLY)

    async def approve(self, decisions: Mapping[str, bool | str]) -> None:
        """Decide the tool calls a run suspended for approval waits on (their ids are in
        the ``pending`` of its ``done`` event): ``True``/``"allow"``, ``False``/``"deny"``
        or ``"always"``. The run goes on, on whichever worker holds it."""
        await self.runs._client.send_async(self.run_id, dict(decisions), APPROVAL)

    async def end(self) -> None:
        """Tell a run waiting for replies that there will be none: it ends now, and
        :meth:`result` returns the result of its last turn."""
        await self.runs._client.send_async(self.run_id, END, REPLY)

    async def cancel(self) -> None:
        """Cancel the run: it stops at its next step; a history it leaves with unanswered
        tool calls is repaired (interrupted results) when the session is next opened."""
        await self.runs._client.cancel_workflow_async(self.run_id)

    def __repr__(self) -> str:
        return f"<RunHandle {self.run_id}>"


def _as_message(prompt: str | Message | Sequence[Block]) -> Message:
    if isinstance(prompt, Message):
        return prompt
    if isinstance(prompt, str):
        return Message(role="user", content=[TextBlock(text=prompt)])
    blocks = list(prompt)
    if not blocks:
        raise ConfigError("A prompt needs at least one block.")
    return Message(role="user", content=blocks)
