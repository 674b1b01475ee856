"""What tether offers an MCP server besides calling its tools: sampling, elicitation, roots.

A server that sees these capabilities registers the tools that need them (the reference
``server-everything`` hides seven tools from a client without them).

- **Sampling** (``sampling/createMessage``): the server asks the agent's model for a
  completion. Each request is approved first (``sampling = "ask"``, the default: the
  ``approve`` callback, else a prompt on a terminal, else declined), runs with no tools
  and counts against nothing of the calling run but is reported in the server's log.
  ``sampling = "allow"`` skips the approval, ``"deny"`` refuses every request.
- **Elicitation** (``elicitation/create``): the server asks the user for input — a form
  (a flat JSON schema) or a URL to visit. It goes the way approvals go: the ``elicit``
  callback, else a prompt on a terminal; with neither it is declined (the tool usually
  reports that it could not go on).
- **Roots** (``roots/list``): the workspace of the calling run (its ``cwd``), else the
  server's ``cwd``, else the current directory.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp import types

if TYPE_CHECKING:
    from tether.config import Config
    from tether.provider import Provider

__all__ = [
    "ClientFeatures",
    "ElicitationRequest",
    "SamplingRequest",
]

log = logging.getLogger("tether.mcp")

Answer = bool | Awaitable[bool]
ElicitAnswer = Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server's request for a completion, as shown for approval."""

    server: str
    messages: list[tuple[str, str]]
    """``(role, text)`` pairs (images are counted in the text as ``[image]``)."""
    system: str | None
    max_tokens: int

    def describe(self) -> str:
        last = self.messages[-1][1] if self.messages else ""
        return f"MCP server `{self.server}` asks the model (up to {self.max_tokens} tokens): {last}"


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A server's request for input from the user: a form (``schema``) or a ``url``."""

    server: str
    message: str
    schema: Mapping[str, Any] | None = None
    url: str | None = None


@dataclass(slots=True)
class ClientFeatures:
    """How one agent answers servers' requests (see the module docstring).

    :param model: the model sampling requests go to: a ``provider/model`` string or a
        :class:`~tether.provider.Provider` (``None``: the configured default model).
    :param sampling: ``"ask"``, ``"allow"`` or ``"deny"``.
    :param approve: ``approve(SamplingRequest) -> bool`` (sync or async).
    :param elicit: ``elicit(ElicitationRequest) -> dict | None`` (sync or async): the
        values of the form (``{}`` to accept a URL), ``None`` to decline.
    :param roots: the directories offered as roots when no run is calling the server.
    :param interactive: prompt on the terminal when a callback is missing (default: when
        stdin and stderr are terminals).
    """

    model: str | Provider | None = None
    sampling: Literal["ask", "allow", "deny"] = "ask"
    approve: Callable[[SamplingRequest], Answer] | None = None
    elicit: Callable[[ElicitationRequest], ElicitAnswer | Awaitable[ElicitAnswer]] | None = None
    roots: list[Path] = field(default_factory=list)
    config: Config | None = None
    interactive: bool | None = None

    def _tty(self) -> bool:
        if self.interactive is not None:
            return self.interactive
        return sys.stdin.isatty() and sys.stderr.isatty()

    # -- roots ---------------------------------------------------------------------------------
    def list_roots(self, calling: list[Path]) -> types.ListRootsResult:
        """The roots: the calling runs' workspaces, else :attr:`roots`, else the cwd."""
        paths = list(dict.fromkeys(calling)) or self.roots or [Path.cwd()]
        return types.ListRootsResult(
            roots=[
                types.Root(uri=p.resolve().as_uri(), name=p.resolve().name or str(p)) for p in paths
            ]
        )

    # -- sampling ------------------------------------------------------------------------------
    async def sample(
        self, server: str, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        request = SamplingRequest(
            server=server,
            messages=[(m.role, _text(m.content_as_list)) for m in params.messages],
            system=params.system_prompt,
            max_tokens=params.max_tokens,
        )
        if not await self._approved(request):
            return types.ErrorData(
                code=-1, message=f"The user declined the sampling request of `{server}`."
            )
        model = self.model if self.model is not None else _default_model(self.config)
        if model is None:
            return types.ErrorData(
                code=-1,
                message="tether has no model to sample with: set `model` in tether.toml.",
            )
        import tether
        from tether.config import Config

        agent = tether.Agent(
            model,
            system=params.system_prompt or "",
            tools=[],
            config=self.config if self.config is not None else Config(),
            max_output_tokens=params.max_tokens,
        )
        try:
            result = await agent.run(_prompt(request.messages))
        except tether.errors.TetherError as exc:
            return types.ErrorData(code=-1, message=f"Sampling failed: {exc}")
        finally:
            await agent.aclose()
        model_name = result.messages[-1].meta.model or "tether" if result.messages else "tether"
        log.info("MCP server %s sampled %s (%s)", server, model_name, result.usage)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=str(result.output)),
            model=model_name,
            stop_reason="endTurn",
        )

    async def _approved(self, request: SamplingRequest) -> bool:
        if self.sampling == "deny":
            return False
        if self.sampling == "allow":
            return True
        if self.approve is not None:
            answer = self.approve(request)
            return bool(await answer if inspect.isawaitable(answer) else answer)
        if self._tty():
            import click

            return await asyncio.to_thread(
                click.confirm, request.describe() + "\nAllow?", default=False, err=True
            )
        log.warning(
            '%s: declined (nobody to approve it; set sampling = "allow")', request.describe()
        )
        return False

    # -- elicitation ---------------------------------------------------------------------------
    async def elicitation(
        self, server: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        url = getattr(params, "url", None)
        schema = getattr(params, "requested_schema", None)
        request = ElicitationRequest(
            server=server,
            message=params.message,
            schema=dict(schema) if isinstance(schema, Mapping) else None,
            url=url,
        )
        if self.elicit is not None:
            answer = self.elicit(request)
            values = await answer if inspect.isawaitable(answer) else answer
        elif self._tty():
            values = await asyncio.to_thread(_ask_on_terminal, request)
        else:
            log.warning(
                "MCP server %s asked for input (%s): declined, nobody to ask.",
                server,
                params.message,
            )
            values = None
        if values is None:
            return types.ElicitResult(action="decline")
        if url is not None:
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=dict(values))


def _text(blocks: list[Any]) -> str:
    parts = []
    for block in blocks:
        kind = getattr(block, "type", None)
        parts.append(block.text if kind == "text" else f"[{kind}]")
    return "\n".join(parts)


def _prompt(messages: list[tuple[str, str]]) -> str:
    if len(messages) == 1:
        return messages[0][1]
    return "\n\n".join(f"{role}: {text}" for role, text in messages)


def _default_model(config: Config | None) -> str | None:
    if config is not None and config.model:
        return config.model
    return None


def _ask_on_terminal(request: ElicitationRequest) -> dict[str, Any] | None:
    """Ask for the form's fields (or consent to open a URL) on the terminal."""
    import click

    click.echo(f"MCP server `{request.server}` asks: {request.message}", err=True)
    if request.url is not None:
        ok = click.confirm(f"Open {request.url}?", default=False, err=True)
        return {} if ok else None
    if not click.confirm("Answer?", default=True, err=True):
        return None
    values: dict[str, Any] = {}
    properties = (request.schema or {}).get("properties", {})
    for name, spec in properties.items():
        kind = spec.get("type", "string")
        label = spec.get("title") or spec.get("description") or name
        converter: Any = {"integer": int, "number": float, "boolean": bool}.get(kind, str)
        values[name] = click.prompt(label, type=converter, default=spec.get("default"), err=True)
    return values
