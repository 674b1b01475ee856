"""One MCP server, connected on first use and reconnected after a crash.

A :class:`ServerConnection` belongs to one agent (or one CLI command). The SDK's
``Client`` lives in a task of its own (the *owner*), because its task groups must be
entered and left by the same task while the agent's runs, which may be different tasks,
call tools through it. Calls that find the server gone get an error result; the next
call starts the server again, after a backoff that doubles with each failure in a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

from mcp import types

from tether.errors import ToolError

from .client_features import ClientFeatures
from .errors import ServerUnavailable
from .settings import ServerSettings
from .stderr_log import CappedLog

T = TypeVar("T")

__all__ = ["ServerConnection"]

log = logging.getLogger("tether.mcp")

MAX_BACKOFF = 30.0
START_RETRY = 30.0
"""Seconds before a server that failed its first start is tried again. A server that ran
before and is gone (restarted, redeployed) is tried again after the restart backoff."""
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]


class ServerConnection:
    """The MCP server ``name``: its tools, and calls to them.

    :param log_dir: where a stdio server's stderr goes (``NAME.log``), so it does not
        mix with the agent's output.
    :param oauth_dir: where OAuth tokens are kept for HTTP servers with ``oauth = true``.
    :param features: how sampling, elicitation and roots requests are answered (see
        :mod:`tether_mcp.client_features`); the server sees those capabilities.
    """

    def __init__(
        self,
        name: str,
        settings: ServerSettings,
        *,
        log_dir: Path | None = None,
        oauth_dir: Path | None = None,
        features: ClientFeatures | None = None,
    ) -> None:
        self.name = name
        self.features = features if features is not None else ClientFeatures()
        self.calling: list[Path] = []
        """Workspaces of the runs calling the server now (its roots while they do)."""
        self.settings = settings
        self.log_dir = log_dir
        self.oauth_dir = oauth_dir
        self.tools: list[types.Tool] = []
        """The server's tools (after the allow-list), as last listed."""
        self.listing = 0
        """Increased each time :attr:`tools` is replaced by a new listing."""
        self.problem: str | None = None
        """Why the server is unavailable, after a failed start."""
        self.stale = False
        """The server said its tool list changed since it was last listed."""
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._failures = 0
        self._started = False
        self._retry_at = 0.0
        self._errlog: TextIO | None = None
        self._stderr: CappedLog | None = None
        self._duplicates: set[str] = set()
        self._relister: asyncio.Future[None] | None = None
        self._inflight: set[asyncio.Task[Any]] = set()
        self._aborted: dict[asyncio.Task[Any], str] = {}

    # -- public ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._client is not None and self._loop is _running_loop()

    @property
    def sdk_client(self) -> Any:
        """The SDK's ``mcp.Client`` while connected (``None`` otherwise), for callers that
        need what tether does not wrap. Calls made on it bypass tether's error handling."""
        return self._client if self.connected else None

    @property
    def backing_off(self) -> bool:
        """A failed start or a crash is recent: starting now would wait for the backoff."""
        return self._retry_at > time.monotonic()

    async def ensure_started(self) -> None:
        """Connect (starting the server) unless connected; raises :class:`ServerUnavailable`."""
        await self._connected_client()

    async def relist(self) -> bool:
        """List the tools again (after a change notification); whether they changed."""
        client = await self._connected_client()
        self.stale = False
        try:
            tools = await self._list_tools(client)
        except Exception as exc:
            await self._drop(f"listing its tools failed: {_describe(exc)}")
            raise ServerUnavailable(self.problem or "", server=self.name) from exc
        return self._set_tools(tools)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        progress: ProgressCallback | None = None,
        read_timeout: float | None = None,
        cwd: Path | None = None,
    ) -> types.CallToolResult:
        """Call ``tool``; a server that is gone or fails raises :class:`ToolError`.
        ``cwd`` is the calling run's workspace, offered as a root while the call runs.

        Cancelling the awaiting task (a cancelled run, a timeout) cancels the request,
        which the SDK announces to the server with ``notifications/cancelled``.
        """
        try:
            client = await self._connected_client()
        except ServerUnavailable as exc:
            raise ToolError(str(exc)) from exc
        task = asyncio.current_task()
        assert task is not None
        self._inflight.add(task)
        if cwd is not None:
            self.calling.append(cwd)
        try:
            return await self._call(client, tool, arguments, progress, read_timeout)
        except asyncio.CancelledError:
            why = self._aborted.pop(task, None)
            if why is None or task.uncancel() > 0:  # not (only) our cancellation
                raise
            await self._drop(why)
            raise ToolError(
                f"The connection to the MCP server `{self.name}` was lost while running "
                f"`{tool}` ({why}); the call may or may not have taken effect. It is "
                "reconnected on the next call."
            ) from None
        finally:
            self._inflight.discard(task)
            self._aborted.pop(task, None)
            if cwd is not None:
                self.calling.remove(cwd)

    async def _call(
        self,
        client: Any,
        tool: str,
        arguments: dict[str, Any],
        progress: ProgressCallback | None,
        read_timeout: float | None,
    ) -> types.CallToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            result: types.CallToolResult = await client.call_tool(
                tool, arguments, read_timeout_seconds=read_timeout, progress_callback=progress
            )
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise ToolError(f"The MCP server `{self.name}` rejected the call: {exc}") from exc
            await self._drop("it stopped during a call")
            raise ToolError(
                f"The MCP server `{self.name}` stopped while running `{tool}`; the call may or "
                "may not have taken effect. The server is restarted on the next call."
            ) from exc
        except Exception as exc:
            if not isinstance(exc, _transport_errors()):
                raise
            await self._drop(f"the connection failed: {_describe(exc)}")
            raise ToolError(
                f"The connection to the MCP server `{self.name}` failed while running `{tool}` "
                f"({_describe(exc)}). It is reconnected on the next call."
            ) from exc
        self._failures = 0
        return result

    # -- resources and prompts -------------------------------------------------------------
    @property
    def offers(self) -> tuple[bool, bool]:
        """Whether the connected server offers (resources, prompts)."""
        client = self.sdk_client
        if client is None:
            return False, False
        caps = client.server_capabilities
        return caps.resources is not None, caps.prompts is not None

    async def list_resources(self) -> list[types.Resource]:
        """The server's resources (none if it offers none); raises :class:`ToolError`."""
        client = await self._feature_client()
        if not self.offers[0]:
            return []
        return await self._all_pages(
            lambda cursor: client.list_resources(cursor=cursor),
            lambda page: page.resources,
            "listing its resources",
        )

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """The contents of resource ``uri``; raises :class:`ToolError`."""
        client = await self._feature_client()
        result: types.ReadResourceResult = await self._ask(
            client.read_resource(uri), f"reading {uri}"
        )
        return result

    async def list_prompts(self) -> list[types.Prompt]:
        """The server's prompts (none if it offers none); raises :class:`ToolError`."""
        client = await self._feature_client()
        if not self.offers[1]:
            return []
        return await self._all_pages(
            lambda cursor: client.list_prompts(cursor=cursor),
            lambda page: page.prompts,
            "listing its prompts",
        )

    async def _all_pages(
        self,
        fetch: Callable[[str | None], Awaitable[Any]],
        items_of: Callable[[Any], list[T]],
        what: str,
    ) -> list[T]:
        """Every item of a paginated listing (at most 100 pages); raises :class:`ToolError`."""
        items: list[T] = []
        cursor: str | None = None
        for _ in range(100):
            page = await self._ask(fetch(cursor), what)
            items.extend(items_of(page))
            cursor = page.next_cursor
            if cursor is None:
                break
        return items

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        """Prompt ``name`` filled in with ``arguments``; raises :class:`ToolError`."""
        client = await self._feature_client()
        result: types.GetPromptResult = await self._ask(
            client.get_prompt(name, arguments), f"getting prompt {name!r}"
        )
        return result

    async def _feature_client(self) -> Any:
        try:
            return await self._connected_client()
        except ServerUnavailable as exc:
            raise ToolError(str(exc)) from exc

    async def _ask(self, request: Awaitable[Any], what: str) -> Any:
        from mcp.shared.exceptions import MCPError

        try:
            return await request
        except MCPError as exc:
            raise ToolError(f"The MCP server `{self.name}` failed {what}: {exc}") from exc

    async def aclose(self) -> None:
        """Stop the server (or close the connection). Safe to call more than once."""
        if self._loop is not None and self._loop is not _running_loop():
            self._forget()
            return
        await self._stop_owner()
        self._forget()

    # -- lifecycle ---------------------------------------------------------------------------
    async def _connected_client(self) -> Any:
        loop = _running_loop()
        if self._loop is not loop:
            self._forget()  # a new event loop: what ran on the old one ended with it
            self._loop = loop
            self._lock = asyncio.Lock()
        if self._client is not None:
            return self._client
        assert self._lock is not None
        async with self._lock:
            if self._client is None:
                delay = self._retry_at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self._start()
            return self._client

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        stop = self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._own(ready, stop), name=f"mcp server {self.name}")
        timeout = self.settings.startup_timeout
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self._stop_owner()
            self._failed(f"it did not answer within {timeout:g} s (startup_timeout)")
        except ServerUnavailable:
            raise
        except Exception as exc:
            await self._stop_owner()
            self._failed(_describe(exc))
        except BaseException:
            await self._stop_owner()
            raise
        self.problem = None
        self._started = True

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """The owner task: enter the SDK client, publish it, wait for ``stop``."""
        client: Any = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(await self._make_client(stack))
                self._set_tools(await self._list_tools(client))
                await self._listen(client, stack)
                self._client = client
                ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.warning("MCP server %s: connection ended: %s", self.name, _describe(exc))
                self._abort_calls(_describe(exc))
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        finally:
            if self._client is client:
                self._client = None

    def _abort_calls(self, why: str) -> None:
        """The connection died under calls that wait for answers that will never come:
        cancel them; :meth:`call` turns that into an error result."""
        for task in list(self._inflight):
            if not task.done():
                self._aborted[task] = why
                task.cancel(f"MCP server {self.name}: connection lost")

    async def _make_client(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp import Client, StdioServerParameters

        settings = self.settings
        common: dict[str, Any] = {
            "message_handler": self._on_message,
            "client_info": types.Implementation(name="tether", version=_version()),
            "sampling_callback": self._on_sampling,
            "elicitation_callback": self._on_elicitation,
            "list_roots_callback": self._on_list_roots,
        }
        if settings.command is not None:
            import os

            errlog = self._open_errlog()
            params = StdioServerParameters(
                command=settings.command,
                args=list(settings.args),
                env={**os.environ, **settings.resolved_env()} if settings.env else None,
                cwd=settings.cwd,
            )
            from mcp.client.stdio import stdio_client

            return Client(stdio_client(params, errlog=errlog), **common)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        auth = None
        if settings.oauth:
            from .oauth import oauth_provider

            auth = oauth_provider(self.name, settings, self.oauth_dir)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=settings.resolved_headers(),
                auth=auth,
                timeout=httpx2.Timeout(30.0, read=300.0),
            )
        )
        assert settings.url is not None
        return Client(streamable_http_client(settings.url, http_client=http), **common)

    async def _listen(self, client: Any, stack: contextlib.AsyncExitStack) -> None:
        """Subscribe to tool-list changes where the protocol needs a subscription (2026-07-28
        and later); older servers send ``notifications/tools/list_changed`` unasked."""
        from mcp.client.subscriptions import ListenNotSupportedError

        tools = client.server_capabilities.tools
        if tools is None or not tools.list_changed:
            return
        try:
            await stack.enter_async_context(client.listen(tools_list_changed=True))
        except ListenNotSupportedError:
            return

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.stale = True
            if self._relister is None or self._relister.done():
                self._relister = asyncio.ensure_future(self._relist_now())
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error: %s", self.name, _describe(message))

    async def _on_sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return await self.features.sample(self.name, params)

    async def _on_elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self.features.elicitation(self.name, params)

    async def _on_list_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        roots = self.settings.cwd
        fallback = [roots] if roots is not None else []
        return self.features.list_roots(self.calling or fallback)

    async def _relist_now(self) -> None:
        """List the tools as soon as the server says they changed, so the next turn
        offers the new list without waiting for a round trip."""
        while self.stale and self._client is not None:
            self.stale = False
            try:
                self._set_tools(await self._list_tools(self._client))
            except Exception as exc:
                self.stale = True
                log.warning(
                    "MCP server %s: listing its tools failed: %s", self.name, _describe(exc)
                )
                return

    async def _list_tools(self, client: Any) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(100):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        tools = [t for t in tools if not _needs_tasks(t)]
        allowed = self.settings.tools
        if allowed is not None:
            tools = [t for t in tools if t.name in allowed]
        return self._first_of_each_name(tools)

    def _first_of_each_name(self, tools: list[types.Tool]) -> list[types.Tool]:
        """``tools`` with a repeated name dropped after its first listing; each repeated
        name is logged once per connection (a server listing a tool twice would otherwise
        give the model two tools of one name, which providers refuse)."""
        kept: dict[str, types.Tool] = {}
        for item in tools:
            if item.name not in kept:
                kept[item.name] = item
            elif item.name not in self._duplicates:
                self._duplicates.add(item.name)
                log.warning(
                    "MCP server %s lists the tool %r more than once; the first listing is "
                    "used and the others are ignored.",
                    self.name,
                    item.name,
                )
        return list(kept.values())

    def _set_tools(self, tools: list[types.Tool]) -> bool:
        def key(items: list[types.Tool]) -> list[Any]:
            return [(t.name, t.description, t.input_schema) for t in items]

        if key(tools) == key(self.tools) and self.listing:
            return False
        self.tools = tools
        self.listing += 1
        return True

    async def _drop(self, why: str) -> None:
        """Forget a connection that failed; the next use restarts the server after a backoff."""
        await self._stop_owner()
        self._failures += 1
        self._retry_at = time.monotonic() + self._backoff()
        log.warning("MCP server %s stopped: %s", self.name, why)

    def _failed(self, why: str) -> None:
        self._failures += 1
        wait = self._backoff() if self._started else max(self._backoff(), START_RETRY)
        self._retry_at = time.monotonic() + wait
        self.problem = f"The MCP server `{self.name}` could not be started: {why}."
        raise ServerUnavailable(
            f"{self.problem} Check [mcp.servers.{self.name}] in tether.toml"
            + (f" and {self._log_path()}." if self.settings.command and self.log_dir else "."),
            server=self.name,
        )

    def _backoff(self) -> float:
        first = self.settings.restart_backoff
        return min(first * 2 ** max(self._failures - 1, 0), MAX_BACKOFF) if first else 0.0

    async def _stop_owner(self) -> None:
        owner, self._owner = self._owner, None
        published = self._client is not None
        self._client = None
        if self._stop is not None:
            self._stop.set()
        if owner is None or owner.done():
            return
        if not published:  # still connecting: nothing to close politely
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
            return
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(owner)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except Exception:
            pass  # the owner logged or reported it

    def _forget(self) -> None:
        self._client = None
        self._owner = None
        self._stop = None
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _log_path(self) -> Path:
        assert self.log_dir is not None
        return self.log_dir / f"{self.name}.log"

    def _open_errlog(self) -> TextIO:
        import sys

        if self.log_dir is None:
            return sys.stderr
        if self._errlog is None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._stderr = CappedLog(self._log_path(), self.settings.log_max_bytes)
            self._errlog = self._stderr.writer
        return self._errlog


def _needs_tasks(tool: types.Tool) -> bool:
    """Whether ``tool`` can only be called as a task (``execution.taskSupport:
    "required"``), which tether does not do: offering it would only fail (-32601)."""
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _transport_errors() -> tuple[type[BaseException], ...]:
    import anyio
    import httpx2

    return (
        OSError,
        EOFError,
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        httpx2.TransportError,
    )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tether-mcp")
    except PackageNotFoundError:
        return "0"
