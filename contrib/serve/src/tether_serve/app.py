"""The ASGI application: ``create_app(agents)`` gives a Starlette app to run with uvicorn
or mount in your own Starlette/FastAPI app (``app.mount("/agents", create_app(...))``).

Routes (all under ``/v1`` need ``Authorization: Bearer KEY`` when keys are configured;
``?protocol=`` is ``tether`` (default), ``ag-ui`` or ``ui-message-stream``):

==========================================  ===================================================
``GET /``                                   the chat page
``GET /healthz``                            liveness (no auth)
``GET /v1/agents``                          the served agents
``GET /v1/sessions``                        the tenant's sessions
``POST /v1/sessions``                       create one (``{"id"?, "agent"?}``)
``GET /v1/sessions/{id}``                   one session: its messages, runs, pending calls
``POST /v1/sessions/{id}/runs``             run a prompt on it (created if new); streams
``POST /v1/sessions/{id}/approvals``        decide pending calls; streams the resumed run
``GET /v1/approvals``                       the tenant's calls waiting for a decision
``GET /v1/questions``                       the tenant's questions waiting for an answer
``POST /v1/sessions/{id}/answers``          answer a session's question; streams the run
``GET /v1/runs``                            the tenant's runs
``GET /v1/runs/{id}``                       one run's status and result
``GET /v1/runs/{id}/events``                its events again (``Last-Event-ID`` resumes)
``GET /v1/runs/{id}/trace``                 its events and run log trace tree, as JSON
``POST /v1/runs/{id}/cancel``               cancel it
``POST /v1/agents/{name}/ag-ui``            AG-UI ``RunAgentInput`` endpoint (``HttpAgent``)
``POST /v1/agents/{name}/ui-message-stream``  AI SDK chat endpoint (``DefaultChatTransport``)
==========================================  ===================================================

Another tenant's session or run id is answered exactly like an unknown one: 404.

With ``durable=`` (``[serve] durable = true``), the session and run routes are served by
:class:`tether_serve.durable.DurableServer` instead: runs on ``tether worker`` processes.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

import tether
from tether import InvalidRequestError
from tether.sessions import repair_messages

from .durable import DurableServer, durable_routes
from .durable import HttpError as DurableHttpError
from .inputs import Ask, ask_from_agui, ask_from_tether, ask_from_ui_messages
from .owners import OwnerStore, jsonl_sessions_in
from .protocols import PROTOCOLS, encoder_for
from .responses import EventStreamResponse
from .runs import Hub, RunRecord, SessionFactory, SessionRecord, valid_session_id
from .settings import AgentSpec, ServeSettings
from .tenants import Caller, KeyLimits, authenticate
from .traces import TraceReader

__all__ = ["agents_from_settings", "create_app"]

log = logging.getLogger("tether_serve")

Handler = Callable[[Request, Caller], Awaitable[Response]]


class HttpError(Exception):
    def __init__(
        self, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message
        self.headers = dict(headers or {})


def _error(
    status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status, headers=headers)


def not_found(what: str, ident: str) -> HttpError:
    return HttpError(404, "not_found", f"No {what} {ident!r}.")


def agents_from_settings(
    settings: ServeSettings,
    config: tether.Config | None = None,
    *,
    plugin_manager: tether.PluginManager | None = None,
) -> dict[str, tether.Agent]:
    """One :class:`tether.Agent` per ``[serve.agents.NAME]`` (without an approval
    callback, so calls a rule asks about suspend the run until decided over HTTP), all
    sharing ``plugin_manager`` when given."""
    return {spec.name: _agent_of(spec, config, plugin_manager) for spec in settings.agents}


def _agent_of(
    spec: AgentSpec, config: tether.Config | None, plugin_manager: tether.PluginManager | None
) -> tether.Agent:
    return tether.Agent(
        spec.model,
        system=spec.system,
        tools=list(spec.tools) if spec.tools is not None else None,
        permissions=spec.permissions,
        output_type=spec.output_type,
        config=config,
        plugin_manager=plugin_manager,
    )


class Server:
    """The state behind one app: agents, settings, the hub of sessions and runs."""

    def __init__(
        self,
        agents: Mapping[str, tether.Agent],
        settings: ServeSettings,
        session_factory: SessionFactory | None,
        owners: OwnerStore | None = None,
    ) -> None:
        if not agents and not settings.durable:
            raise tether.ConfigError(
                "No agents to serve. Pass agents={'default': tether.Agent(...)} or add "
                "[serve.agents.default] (model, tools, ...) to tether.toml."
            )
        self.agents = dict(agents)
        self.settings = settings
        self.limits = KeyLimits(
            settings.rate_per_minute, settings.rate_burst, settings.max_concurrent_runs
        )
        self.hub = Hub(
            cancel_deadline_s=settings.cancel_deadline_s,
            disconnect_grace_s=settings.disconnect_grace_s,
            retained_runs=settings.retained_runs,
            session_factory=session_factory,
            on_run_end=lambda run: self.limits.end_run(run.key_id),
            owners=owners,
        )
        self.traces = TraceReader(settings.run_log)

    # -- plumbing --------------------------------------------------------------------------
    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Authenticate, rate-limit and turn :class:`HttpError` into JSON errors."""

        async def endpoint(request: Request) -> Response:
            caller = authenticate(self.settings.keys, request.headers.get("authorization"))
            if caller is None:
                return _error(
                    401,
                    "unauthorized",
                    "Missing or unknown API key. Send Authorization: Bearer <key>.",
                    {"www-authenticate": "Bearer"},
                )
            wait = self.limits.take(caller.key_id)
            if wait is not None:
                return _error(
                    429,
                    "rate_limited",
                    f"Too many requests for this key; retry in {wait:.1f} s.",
                    {"retry-after": str(max(1, round(wait)))},
                )
            try:
                return await handler(request, caller)
            except (HttpError, DurableHttpError) as error:
                return _error(error.status, error.kind, error.message, error.headers)
            except InvalidRequestError as error:
                return _error(422, "invalid_request", str(error))

        return endpoint

    async def body(self, request: Request) -> Any:
        """The JSON body, refused over ``max_body_bytes`` (413) or when not JSON (400)."""
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise HttpError(413, "too_large", f"The body is over {limit} bytes.")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HttpError(413, "too_large", f"The body is over {limit} bytes.")
            chunks.append(chunk)
        if not size:
            return {}
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            raise HttpError(400, "bad_json", "The body is not valid JSON.") from None

    def protocol(self, request: Request) -> str:
        name = request.query_params.get("protocol", "tether")
        if name not in PROTOCOLS:
            raise HttpError(
                422,
                "invalid_request",
                f"Unknown protocol {name!r}; use one of {sorted(PROTOCOLS)}.",
            )
        return name

    def agent(self, name: str) -> tether.Agent:
        agent = self.agents.get(name)
        if agent is None:
            raise not_found("agent", name)
        return agent

    def session(self, caller: Caller, session_id: str) -> SessionRecord:
        record = self.hub.session(caller.tenant, session_id)
        if record is None:
            raise not_found("session", session_id)
        return record

    def open_for(self, caller: Caller, session_id: str, agent: str) -> SessionRecord:
        """The caller's session ``session_id`` (created for ``agent`` if new); a session
        belongs to the agent that made it."""
        record = self.hub.open_session(caller.tenant, session_id, agent)
        if record.agent != agent:
            raise HttpError(
                409,
                "other_agent",
                f"Session {session_id!r} belongs to agent {record.agent!r}, not {agent!r}; "
                "continue it there or use another session id.",
            )
        return record

    def run_of(self, caller: Caller, run_id: str) -> RunRecord:
        run = self.hub.run(caller.tenant, run_id)
        if run is None:
            raise not_found("run", run_id)
        return run

    # -- starting and streaming runs -------------------------------------------------------
    def begin(self, caller: Caller, record: SessionRecord, ask: Ask) -> RunRecord:
        """Start the run ``ask`` calls for on ``record``: a prompt, or a resume."""
        if record.running is not None:
            raise HttpError(
                409,
                "busy",
                f"Session {record.id!r} is running {record.running!r}; wait or cancel it.",
            )
        agent = self.agent(record.agent)
        session = record.session
        if ask.prompt is None:
            pending = {p["call_id"] for p in record.pending}
            if not pending:
                raise HttpError(
                    409, "nothing_pending", f"Session {record.id!r} waits for no decision."
                )
            missing, unknown = pending - set(ask.decisions), set(ask.decisions) - pending
            if missing or unknown:
                raise InvalidRequestError(
                    f"Decide every pending call of session {record.id!r}: pending "
                    f"{sorted(pending)}; missing {sorted(missing)}; unknown {sorted(unknown)}."
                )
        if not self.limits.start_run(caller.key_id):
            raise HttpError(
                429,
                "too_many_runs",
                f"This key already has {self.settings.max_concurrent_runs} runs going; "
                "wait for one to end.",
                {"retry-after": "1"},
            )
        if ask.prompt is not None:
            prompt = ask.prompt
            return self.hub.start(
                record,
                caller.key_id,
                "prompt",
                lambda cancel: agent.stream(prompt, session=session, cancel=cancel),
            )
        decisions = dict(ask.decisions)
        return self.hub.start(
            record,
            caller.key_id,
            "resume",
            lambda cancel: agent.resume_stream(decisions, session=session, cancel=cancel),
        )

    def stream(
        self, run: RunRecord, protocol: str, after: int = 0, client_run_id: str | None = None
    ) -> EventStreamResponse:
        """Stream ``run`` in ``protocol`` from after event ``after``; the run is cancelled
        when its last client goes away (see ``disconnect_grace_s``)."""
        encoder = encoder_for(protocol, run.id, run.session_id, client_run_id)
        hub, keepalive = self.hub, self.settings.keepalive_s
        run.clients += 1

        async def frames() -> AsyncIterator[str]:
            async with contextlib.aclosing(run.follow(0, keepalive)) as events:
                async for item in events:
                    if item is None:
                        yield ": keep-alive\n\n"
                        continue
                    seq, event = item
                    encoded = encoder.encode(event)
                    if seq <= after or not encoded:
                        continue
                    encoded[-1] = f"id: {seq}\n{encoded[-1]}"
                    yield "".join(encoded)
            trailer = encoder.trailer()
            if trailer:
                yield "".join(trailer)

        headers = {
            **encoder.headers,
            "x-tether-run-id": run.id,
            "x-tether-session-id": run.session_id,
        }
        return EventStreamResponse(frames(), headers, on_close=lambda: hub.detach(run))

    # -- endpoints -------------------------------------------------------------------------
    async def list_agents(self, request: Request, caller: Caller) -> Response:
        return JSONResponse({"agents": sorted(self.agents)})

    async def list_sessions(self, request: Request, caller: Caller) -> Response:
        return JSONResponse(
            {"sessions": [s.summary() for s in self.hub.sessions_of(caller.tenant)]}
        )

    async def create_session(self, request: Request, caller: Caller) -> Response:
        body = await self.body(request)
        if not isinstance(body, Mapping):
            raise InvalidRequestError(
                'The body must be a JSON object: {"id"?: ..., "agent"?: ...}.'
            )
        session_id = body.get("id")
        if session_id is not None and (
            not isinstance(session_id, str) or not valid_session_id(session_id)
        ):
            raise InvalidRequestError(
                "A session id is 1-128 letters, digits, '_', '.', ':' or '-'."
            )
        agent = body.get("agent", self.default_agent)
        self.agent(agent)
        if session_id is not None and self.hub.session(caller.tenant, session_id) is not None:
            raise HttpError(409, "exists", f"Session {session_id!r} exists already.")
        record = self.hub.open_session(caller.tenant, session_id, agent)
        return JSONResponse(record.summary(), 201)

    @property
    def default_agent(self) -> str:
        return "default" if "default" in self.agents else next(iter(self.agents))

    async def read_session(self, request: Request, caller: Caller) -> Response:
        record = self.session(caller, request.path_params["session_id"])
        messages = [m.model_dump(mode="json") for m in record.session.messages]
        return JSONResponse({**record.summary(), "history": messages})

    async def run_prompt(self, request: Request, caller: Caller) -> Response:
        session_id = request.path_params["session_id"]
        if not valid_session_id(session_id):
            raise InvalidRequestError(
                "A session id is 1-128 letters, digits, '_', '.', ':' or '-'."
            )
        protocol = self.protocol(request)
        body = await self.body(request)
        ask = ask_from_tether(body)
        existing = self.hub.session(caller.tenant, session_id)
        agent = body.get("agent") or (existing.agent if existing else self.default_agent)
        self.agent(agent)
        record = self.open_for(caller, session_id, agent)
        return self.stream(self.begin(caller, record, ask), protocol)

    async def decide(self, request: Request, caller: Caller) -> Response:
        record = self.session(caller, request.path_params["session_id"])
        protocol = self.protocol(request)
        ask = ask_from_tether(await self.body(request))
        if ask.prompt is not None:
            raise InvalidRequestError(
                'Send {"decisions": {"<call id>": "allow" | "deny" | "always"}}.'
            )
        return self.stream(self.begin(caller, record, ask), protocol)

    async def list_approvals(self, request: Request, caller: Caller) -> Response:
        pending = [p for s in self.hub.sessions_of(caller.tenant) for p in s.pending]
        return JSONResponse({"approvals": pending})

    async def list_questions(self, request: Request, caller: Caller) -> Response:
        asked = [s.question for s in self.hub.sessions_of(caller.tenant) if s.question]
        return JSONResponse({"questions": asked})

    async def answer(self, request: Request, caller: Caller) -> Response:
        """A person's answer to the question a tool asked (``NeedsHuman``): the session's
        next prompt, streamed like any run."""
        record = self.session(caller, request.path_params["session_id"])
        protocol = self.protocol(request)
        body = await self.body(request)
        answer = body.get("answer") if isinstance(body, Mapping) else None
        if not isinstance(answer, str) or not answer.strip():
            raise InvalidRequestError('Send {"answer": "<the answer, as text>"}.')
        if record.question is None:
            raise HttpError(409, "nothing_asked", f"Session {record.id!r} waits for no answer.")
        return self.stream(self.begin(caller, record, Ask(prompt=answer)), protocol)

    async def list_runs(self, request: Request, caller: Caller) -> Response:
        return JSONResponse({"runs": [r.summary() for r in self.hub.runs_of(caller.tenant)]})

    async def read_run(self, request: Request, caller: Caller) -> Response:
        return JSONResponse(self.run_of(caller, request.path_params["run_id"]).summary())

    async def run_events(self, request: Request, caller: Caller) -> Response:
        run = self.run_of(caller, request.path_params["run_id"])
        protocol = self.protocol(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not raw.isdigit():
            raise InvalidRequestError(f"Last-Event-ID must be an event number; got {raw!r}.")
        return self.stream(run, protocol, after=int(raw))

    async def run_trace(self, request: Request, caller: Caller) -> Response:
        run = self.run_of(caller, request.path_params["run_id"])
        return JSONResponse(await self.traces.trace(run))

    async def cancel_run(self, request: Request, caller: Caller) -> Response:
        run = self.run_of(caller, request.path_params["run_id"])
        await self.hub.cancel(run, "cancelled over HTTP")
        return JSONResponse(run.summary())

    async def agui(self, request: Request, caller: Caller) -> Response:
        from ag_ui.core import RunAgentInput
        from pydantic import ValidationError

        agent = request.path_params["agent"]
        self.agent(agent)
        try:
            given = RunAgentInput.model_validate(await self.body(request))
        except ValidationError as error:
            raise InvalidRequestError(f"Not an AG-UI RunAgentInput: {error}") from None
        if not valid_session_id(given.thread_id):
            raise InvalidRequestError(
                "threadId must be 1-128 letters, digits, '_', '.', ':' or '-'."
            )
        record = self.open_for(caller, given.thread_id, agent)
        run = self.begin(caller, record, ask_from_agui(given.messages, given.resume))
        return self.stream(run, "ag-ui", client_run_id=given.run_id)

    async def ui_messages(self, request: Request, caller: Caller) -> Response:
        agent = request.path_params["agent"]
        self.agent(agent)
        body = await self.body(request)
        ask = ask_from_ui_messages(body)
        chat_id = body.get("id")
        if not isinstance(chat_id, str) or not valid_session_id(chat_id):
            raise InvalidRequestError(
                "The chat id must be 1-128 letters, digits, '_', '.', ':' or '-'."
            )
        record = self.open_for(caller, chat_id, agent)
        return self.stream(self.begin(caller, record, ask), "ui-message-stream")


def session_is_valid(record: SessionRecord) -> bool:
    """Whether the session's history keeps tether's invariant (nothing to repair)."""
    _, report = repair_messages(list(record.session.messages))
    return not report


async def chat_page(request: Request) -> Response:
    page = resources.files("tether_serve").joinpath("static/chat.html").read_text("utf-8")
    return HTMLResponse(
        page,
        headers={
            "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; "
            "style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
            "x-content-type-options": "nosniff",
        },
    )


async def healthz(request: Request) -> Response:
    return JSONResponse({"ok": True})


def create_app(
    agents: Mapping[str, tether.Agent],
    settings: ServeSettings | None = None,
    *,
    session_factory: SessionFactory | None = None,
    owners: OwnerStore | None = None,
    durable: DurableServer | None = None,
) -> Starlette:
    """The ASGI app serving ``agents`` (route name → agent).

    :param settings: keys, limits, CORS (see :class:`~tether_serve.settings.ServeSettings`).
    :param session_factory: ``factory(tenant, session_id)`` opens a new session's history
        (in memory by default; return a ``JsonlSession`` or a store's session to keep it).
    :param owners: where to keep which tenant owns which session, so a restarted server
        serves them again (give it with a ``session_factory`` that keeps histories).
        ``settings.sessions_dir`` sets both up with JSONL files.

    :param durable: serve durable runs through it instead (``[serve] durable``; see
        :mod:`tether_serve.durable`); ``agents`` may then be empty.

    ``app.state.server.hub`` holds the sessions and runs (for tests and monitoring).
    """
    settings = settings or ServeSettings()
    if settings.sessions_dir is not None and session_factory is None and owners is None:
        session_factory, owners = jsonl_sessions_in(settings.sessions_dir)
    server = Server(agents, settings, session_factory, owners)
    g = server.guarded
    routes = [] if durable is None else durable_routes(durable, g)
    routes += [
        Route("/", chat_page, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/v1/agents", g(server.list_agents), methods=["GET"]),
        Route("/v1/sessions", g(server.list_sessions), methods=["GET"]),
        Route("/v1/sessions", g(server.create_session), methods=["POST"]),
        Route("/v1/sessions/{session_id}", g(server.read_session), methods=["GET"]),
        Route("/v1/sessions/{session_id}/runs", g(server.run_prompt), methods=["POST"]),
        Route("/v1/sessions/{session_id}/approvals", g(server.decide), methods=["POST"]),
        Route("/v1/sessions/{session_id}/answers", g(server.answer), methods=["POST"]),
        Route("/v1/approvals", g(server.list_approvals), methods=["GET"]),
        Route("/v1/questions", g(server.list_questions), methods=["GET"]),
        Route("/v1/runs", g(server.list_runs), methods=["GET"]),
        Route("/v1/runs/{run_id}", g(server.read_run), methods=["GET"]),
        Route("/v1/runs/{run_id}/events", g(server.run_events), methods=["GET"]),
        Route("/v1/runs/{run_id}/trace", g(server.run_trace), methods=["GET"]),
        Route("/v1/runs/{run_id}/cancel", g(server.cancel_run), methods=["POST"]),
        Route("/v1/agents/{agent}/ag-ui", g(server.agui), methods=["POST"]),
        Route("/v1/agents/{agent}/ui-message-stream", g(server.ui_messages), methods=["POST"]),
    ]
    middleware = []
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "last-event-id"],
                expose_headers=["x-tether-run-id", "x-tether-session-id"],
            )
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await server.hub.aclose()
        if durable is not None:
            await durable.aclose()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.server = server
    return app
