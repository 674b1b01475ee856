"""Durable runs behind the server (``[serve] durable = true``): runs go to ``tether
worker`` processes through tether-dbos, and any server on the same database serves them.

- A run is submitted with :meth:`tether_dbos.DurableRuns.submit` (the agent built on the
  worker by its ``durable_agent = "module:function"``) and streamed from
  :meth:`tether_dbos.RunHandle.events`. An event's SSE id is its position in that durable
  stream, the same on every server, so a client reconnecting to any server with
  ``Last-Event-ID`` gets exactly the rest.
- A client that disconnects detaches: the run goes on. ``POST /v1/runs/{id}/cancel``
  cancels it (``handle.cancel()``).
- A run suspended for approval waits durably; ``POST /v1/sessions/{id}/approvals``
  (on any server) sends the decisions with ``handle.approve()`` and streams the run
  from where it resumes.
- Which tenant owns which session and run is kept in PostgreSQL (the ``[durable]``
  database, tables ``tether_serve_sessions`` and ``tether_serve_runs``) and read on every
  lookup: another tenant's id is a 404, whichever server is asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import tether
from tether import InvalidRequestError

from .protocols import encoder_for
from .responses import EventStreamResponse
from .runs import valid_session_id
from .settings import ServeSettings
from .tenants import Caller

__all__ = ["DurableServer", "durable_routes", "durable_server_from_settings"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tether_serve_sessions (
    tenant text NOT NULL, session text NOT NULL, agent text NOT NULL,
    store_name text NOT NULL UNIQUE, created double precision NOT NULL,
    PRIMARY KEY (tenant, session));
CREATE TABLE IF NOT EXISTS tether_serve_runs (
    run_id text PRIMARY KEY, tenant text NOT NULL, session text NOT NULL,
    kind text NOT NULL, created double precision NOT NULL);
CREATE INDEX IF NOT EXISTS tether_serve_runs_by_session
    ON tether_serve_runs (tenant, session, created);
"""

T = TypeVar("T")
Handler = Callable[[Request, Caller], Awaitable[Response]]


def store_name(tenant: str, session: str) -> str:
    """The session's name in the workers' store: opaque and distinct per tenant, so two
    tenants' sessions of the same id never share a history."""
    return "serve-" + hashlib.sha256(f"{tenant}\0{session}".encode()).hexdigest()[:40]


class DurableServer:
    """The durable side of the routes: submits, follows, decides and cancels runs through
    tether-dbos, and keeps ownership in PostgreSQL.

    :param agents: served agent name → ``"package.module:function"`` for the workers.
    :param config: the configuration whose ``[durable]`` section names the database.
    """

    def __init__(
        self, agents: Mapping[str, str], settings: ServeSettings, config: tether.Config
    ) -> None:
        from tether_dbos import DurableRuns

        if not agents:
            raise tether.ConfigError(
                "[serve] durable = true needs agents with durable_agent = "
                '"package.module:function" in [serve.agents.NAME].'
            )
        self.agents = dict(agents)
        self.settings = settings
        self.runs = DurableRuns(config)
        url = self.runs.settings.system_database_url(config)
        if not url.startswith("postgres"):
            raise tether.ConfigError(
                "[serve] durable = true needs a PostgreSQL database in [durable.settings] "
                "(database_url or database_url_env), shared by servers and workers."
            )
        self.url = url.replace("postgresql+psycopg://", "postgresql://", 1)
        self._ready = False

    # -- ownership, in PostgreSQL ----------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _db(self) -> AsyncIterator[Any]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=10, options="-c statement_timeout=30000"
        ) as conn:
            if not self._ready:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(72010001)")
                    await conn.execute(_SCHEMA)
                self._ready = True
            yield conn

    async def _session(self, tenant: str, session: str) -> dict[str, Any] | None:
        async with self._db() as conn:
            row = await (
                await conn.execute(
                    "SELECT agent, store_name, created FROM tether_serve_sessions "
                    "WHERE tenant = %s AND session = %s",
                    (tenant, session),
                )
            ).fetchone()
            if row is None:
                return None
            runs = await (
                await conn.execute(
                    "SELECT run_id FROM tether_serve_runs WHERE tenant = %s AND session = %s "
                    "ORDER BY created",
                    (tenant, session),
                )
            ).fetchall()
        return {
            "id": session,
            "agent": row[0],
            "store_name": row[1],
            "created": row[2],
            "runs": [r[0] for r in runs],
        }

    async def _claim(self, tenant: str, session: str, agent: str) -> dict[str, Any]:
        async with self._db() as conn:
            await conn.execute(
                "INSERT INTO tether_serve_sessions (tenant, session, agent, store_name, created) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (tenant, session, agent, store_name(tenant, session), time.time()),
            )
        found = await self._session(tenant, session)
        assert found is not None
        return found

    async def _run(self, tenant: str, run_id: str) -> dict[str, Any]:
        async with self._db() as conn:
            row = await (
                await conn.execute(
                    "SELECT session, kind, created FROM tether_serve_runs "
                    "WHERE tenant = %s AND run_id = %s",
                    (tenant, run_id),
                )
            ).fetchone()
        if row is None:
            raise _not_found("run", run_id)
        return {"id": run_id, "session_id": row[0], "kind": row[1], "created": row[2]}

    # -- streaming ---------------------------------------------------------------------------
    def stream(
        self,
        run_id: str,
        session_id: str,
        protocol: str,
        *,
        after: int = 0,
    ) -> EventStreamResponse:
        """Stream the durable run from after event ``after`` (its position in the run's
        durable stream) up to the next ``done`` (a suspended run's stream ends
        there, as in-process; the approvals endpoint streams what follows).
        ``approval_request`` events (one per pending call) go just before a suspended
        ``done``, with its id. Disconnecting detaches; the run goes on."""
        encoder = encoder_for(protocol, run_id, session_id)
        handle = self.runs.handle(run_id)
        keepalive = self.settings.keepalive_s

        async def frames() -> AsyncIterator[str]:
            position = 0
            events = handle.events().__aiter__()
            pending: asyncio.Future[dict[str, Any]] | None = None
            try:
                while True:
                    if pending is None:
                        pending = asyncio.ensure_future(events.__anext__())
                    done, _ = await asyncio.wait({pending}, timeout=keepalive)
                    if not done:
                        yield ": keep-alive\n\n"
                        continue
                    try:
                        event = pending.result()
                    except StopAsyncIteration:
                        break
                    finally:
                        pending = None
                    position += 1
                    suspended = event.get("type") == "done" and event.get("outcome") == (
                        "suspended"
                    )
                    if position <= after:
                        continue
                    extra = _approval_requests(event, session_id) if suspended else []
                    for item in [*extra, event]:
                        encoded = encoder.encode(item)
                        if encoded:
                            encoded[-1] = f"id: {position}\n{encoded[-1]}"
                            yield "".join(encoded)
                    if event.get("type") == "done":
                        break  # a suspended run goes on only once decided
            finally:
                if pending is not None and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(BaseException):
                        await pending
                close = getattr(events, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()
            trailer = encoder.trailer()
            if trailer:
                yield "".join(trailer)

        headers = {**encoder.headers, "x-tether-run-id": run_id, "x-tether-session-id": session_id}
        return EventStreamResponse(frames(), headers)

    # -- endpoints ---------------------------------------------------------------------------
    async def list_agents(self, request: Request, caller: Caller) -> Response:
        return JSONResponse({"agents": sorted(self.agents)})

    async def list_sessions(self, request: Request, caller: Caller) -> Response:
        async with self._db() as conn:
            rows = await (
                await conn.execute(
                    "SELECT session FROM tether_serve_sessions WHERE tenant = %s ORDER BY created",
                    (caller.tenant,),
                )
            ).fetchall()
        sessions = [await self._session(caller.tenant, r[0]) for r in rows]
        return JSONResponse({"sessions": [_public(s) for s in sessions if s is not None]})

    async def create_session(self, request: Request, caller: Caller) -> Response:
        body = await _body(request, self.settings.max_body_bytes)
        session_id = body.get("id") or uuid.uuid4().hex
        _check_session_id(session_id)
        agent = self._agent(body.get("agent"))
        if await self._session(caller.tenant, session_id) is not None:
            raise HttpError(409, "exists", f"Session {session_id!r} exists already.")
        return JSONResponse(_public(await self._claim(caller.tenant, session_id, agent)), 201)

    async def read_session(self, request: Request, caller: Caller) -> Response:
        session_id = request.path_params["session_id"]
        found = await self._session(caller.tenant, session_id)
        if found is None:
            raise _not_found("session", session_id)
        return JSONResponse(_public(found))

    async def run_prompt(self, request: Request, caller: Caller) -> Response:
        session_id = request.path_params["session_id"]
        _check_session_id(session_id)
        protocol = _protocol(request)
        body = await _body(request, self.settings.max_body_bytes)
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidRequestError('Send {"prompt": "<text>"} to run a prompt.')
        existing = await self._session(caller.tenant, session_id)
        agent = self._agent(body.get("agent") or (existing["agent"] if existing else None))
        record = existing or await self._claim(caller.tenant, session_id, agent)
        if record["agent"] != agent:
            raise HttpError(
                409,
                "other_agent",
                f"Session {session_id!r} belongs to agent {record['agent']!r}, not {agent!r}.",
            )
        if record["runs"]:
            last = record["runs"][-1]
            if await _bounded(self.runs.handle(last).status()) in ("ENQUEUED", "PENDING"):
                raise HttpError(
                    409,
                    "busy",
                    f"Session {session_id!r} is running {last!r} (or it waits for a "
                    "decision); wait, decide its pending calls, or cancel it.",
                )
        run_id = f"run-{uuid.uuid4().hex}"
        async with self._db() as conn:
            await conn.execute(
                "INSERT INTO tether_serve_runs (run_id, tenant, session, kind, created) "
                "VALUES (%s, %s, %s, 'prompt', %s)",
                (run_id, caller.tenant, session_id, time.time()),
            )
        try:
            await _bounded(
                self.runs.submit(
                    prompt, session=record["store_name"], agent=self.agents[agent], run_id=run_id
                )
            )
        except BaseException:
            async with self._db() as conn:
                await conn.execute("DELETE FROM tether_serve_runs WHERE run_id = %s", (run_id,))
            raise
        return self.stream(run_id, session_id, protocol)

    async def decide(self, request: Request, caller: Caller) -> Response:
        session_id = request.path_params["session_id"]
        found = await self._session(caller.tenant, session_id)
        if found is None:
            raise _not_found("session", session_id)
        protocol = _protocol(request)
        body = await _body(request, self.settings.max_body_bytes)
        decisions = body.get("decisions")
        if (
            not isinstance(decisions, Mapping)
            or not decisions
            or not all(v in ("allow", "deny", "always", True, False) for v in decisions.values())
        ):
            raise InvalidRequestError(
                'Send {"decisions": {"<call id>": "allow" | "deny" | "always"}}.'
            )
        waiting = await self._suspension(found["runs"][-1]) if found["runs"] else None
        if waiting is None:
            raise HttpError(
                409, "nothing_pending", f"Session {session_id!r} waits for no decision."
            )
        run_id, position, done = found["runs"][-1], *waiting
        pending = {p["call_id"] for p in done.get("pending") or []}
        missing, unknown = pending - set(decisions), set(decisions) - pending
        if missing or unknown:
            raise InvalidRequestError(
                f"Decide every pending call of session {session_id!r}: pending "
                f"{sorted(pending)}; missing {sorted(missing)}; unknown {sorted(unknown)}."
            )
        await _bounded(self.runs.handle(run_id).approve(dict(decisions)))
        return self.stream(run_id, session_id, protocol, after=position)

    async def _suspension(self, run_id: str) -> tuple[int, dict[str, Any]] | None:
        """``(position, done)`` when the run's stream, as published so far, ends with a
        ``done`` that suspended it for approval; else ``None``."""
        position, last = 0, None
        events = self.runs.handle(run_id).events(idle_timeout_s=_QUIET_S)
        try:
            async with asyncio.timeout(_DEADLINE_S):
                async for event in events:
                    position, last = position + 1, event
        except TimeoutError:
            pass  # nothing more published: the run is waiting (or busy)
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        if last and last.get("type") == "done" and last.get("outcome") == "suspended":
            return position, last
        return None

    async def list_approvals(self, request: Request, caller: Caller) -> Response:
        """The calls the tenant's durable runs wait on, as in-process (``run_id`` and
        ``session_id`` added to each)."""
        async with self._db() as conn:
            rows = await (
                await conn.execute(
                    "SELECT DISTINCT ON (session) session, run_id FROM tether_serve_runs "
                    "WHERE tenant = %s ORDER BY session, created DESC",
                    (caller.tenant,),
                )
            ).fetchall()

        async def pending_of(session: str, run_id: str) -> list[dict[str, Any]]:
            if await _bounded(self.runs.handle(run_id).status()) != "PENDING":
                return []
            waiting = await self._suspension(run_id)
            if waiting is None:
                return []
            return [
                dict(p, run_id=run_id, session_id=session) for p in waiting[1].get("pending") or []
            ]

        found = await asyncio.gather(*(pending_of(session, run) for session, run in rows))
        return JSONResponse({"approvals": [p for calls in found for p in calls]})

    async def list_runs(self, request: Request, caller: Caller) -> Response:
        async with self._db() as conn:
            rows = await (
                await conn.execute(
                    "SELECT run_id FROM tether_serve_runs WHERE tenant = %s ORDER BY created",
                    (caller.tenant,),
                )
            ).fetchall()
        return JSONResponse({"runs": [await self._summary(caller, r[0]) for r in rows]})

    async def _summary(self, caller: Caller, run_id: str) -> dict[str, Any]:
        run = await self._run(caller.tenant, run_id)
        status = await _bounded(self.runs.handle(run_id).status())
        return {**run, "status": _STATUS.get(status, status.lower())}

    async def read_run(self, request: Request, caller: Caller) -> Response:
        return JSONResponse(await self._summary(caller, request.path_params["run_id"]))

    async def run_events(self, request: Request, caller: Caller) -> Response:
        run = await self._run(caller.tenant, request.path_params["run_id"])
        protocol = _protocol(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not raw.isdigit():
            raise InvalidRequestError(f"Last-Event-ID must be an event number; got {raw!r}.")
        return self.stream(run["id"], run["session_id"], protocol, after=int(raw))

    async def cancel_run(self, request: Request, caller: Caller) -> Response:
        run = await self._run(caller.tenant, request.path_params["run_id"])
        await _bounded(self.runs.handle(run["id"]).cancel())
        return JSONResponse(await self._summary(caller, run["id"]))

    async def not_durable(self, request: Request, caller: Caller) -> Response:
        raise HttpError(
            501,
            "not_available",
            "This route is not available with [serve] durable = true; use "
            "/v1/sessions/{id}/runs (?protocol=ag-ui or ui-message-stream) and /v1/runs.",
        )

    def _agent(self, name: Any) -> str:
        name = name or ("default" if "default" in self.agents else next(iter(self.agents)))
        if name not in self.agents:
            raise _not_found("agent", str(name))
        return str(name)

    async def aclose(self) -> None:
        await self.runs.aclose()


class HttpError(Exception):
    """Raised by the durable handlers; the app's guard turns it into a JSON error."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message
        self.headers: dict[str, str] = {}


_STATUS = {
    "ENQUEUED": "queued",
    "PENDING": "running",
    "SUCCESS": "completed",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
}


_DEADLINE_S = 30.0
"""The longest a request waits for the durable database (DBOS's client) to answer."""
_QUIET_S = 1.0
"""How long a run's stream must stay quiet to be taken as all published so far."""


async def _bounded(operation: Awaitable[T]) -> T:
    try:
        async with asyncio.timeout(_DEADLINE_S):
            return await operation
    except TimeoutError:
        raise HttpError(
            503,
            "unavailable",
            f"The durable-run database did not answer within {_DEADLINE_S:.0f} s; retry.",
        ) from None


def _not_found(what: str, ident: str) -> HttpError:
    return HttpError(404, "not_found", f"No {what} {ident!r}.")


def _public(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "store_name"}


def _check_session_id(value: Any) -> None:
    if not isinstance(value, str) or not valid_session_id(value):
        raise InvalidRequestError("A session id is 1-128 letters, digits, '_', '.', ':' or '-'.")


def _protocol(request: Request) -> str:
    from .protocols import PROTOCOLS

    name = request.query_params.get("protocol", "tether")
    if name not in PROTOCOLS:
        raise HttpError(
            422, "invalid_request", f"Unknown protocol {name!r}; use one of {sorted(PROTOCOLS)}."
        )
    return name


async def _body(request: Request, limit: int) -> dict[str, Any]:
    import json

    raw = await request.body()
    if len(raw) > limit:
        raise HttpError(413, "too_large", f"The body is over {limit} bytes.")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise HttpError(400, "bad_json", "The body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise InvalidRequestError("The body must be a JSON object.")
    return value


def _approval_requests(done: dict[str, Any], session_id: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "approval_request",
            "call_id": call["call_id"],
            "tool": call["tool"],
            "arguments": call["arguments"],
            "rule": call.get("rule"),
            "session_id": session_id,
        }
        for call in done.get("pending") or []
    ]


def durable_routes(
    server: DurableServer, guarded: Callable[[Handler], Callable[[Request], Awaitable[Response]]]
) -> list[Route]:
    """The ``/v1`` routes served by ``server`` (the rest answer 501)."""
    g, s = guarded, server
    return [
        Route("/v1/agents", g(s.list_agents), methods=["GET"]),
        Route("/v1/sessions", g(s.list_sessions), methods=["GET"]),
        Route("/v1/sessions", g(s.create_session), methods=["POST"]),
        Route("/v1/sessions/{session_id}", g(s.read_session), methods=["GET"]),
        Route("/v1/sessions/{session_id}/runs", g(s.run_prompt), methods=["POST"]),
        Route("/v1/sessions/{session_id}/approvals", g(s.decide), methods=["POST"]),
        Route("/v1/sessions/{session_id}/answers", g(s.not_durable), methods=["POST"]),
        Route("/v1/approvals", g(s.list_approvals), methods=["GET"]),
        Route("/v1/questions", g(s.not_durable), methods=["GET"]),
        Route("/v1/runs", g(s.list_runs), methods=["GET"]),
        Route("/v1/runs/{run_id}", g(s.read_run), methods=["GET"]),
        Route("/v1/runs/{run_id}/events", g(s.run_events), methods=["GET"]),
        Route("/v1/runs/{run_id}/trace", g(s.not_durable), methods=["GET"]),
        Route("/v1/runs/{run_id}/cancel", g(s.cancel_run), methods=["POST"]),
        Route("/v1/agents/{agent}/ag-ui", g(s.not_durable), methods=["POST"]),
        Route("/v1/agents/{agent}/ui-message-stream", g(s.not_durable), methods=["POST"]),
    ]


def durable_server_from_settings(settings: ServeSettings, config: tether.Config) -> DurableServer:
    """The :class:`DurableServer` of ``[serve]`` with ``durable = true``: every agent needs
    its ``durable_agent``."""
    missing = [a.name for a in settings.agents if not a.durable_agent]
    if missing:
        raise tether.ConfigError(
            f"[serve] durable = true: agents {missing} have no durable_agent. Add "
            'durable_agent = "package.module:function" (building the agent on the workers).'
        )
    return DurableServer({a.name: str(a.durable_agent) for a in settings.agents}, settings, config)
