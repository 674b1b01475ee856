"""Tools: typed Python functions the model can call.

::

    @tether.tool
    async def get_weather(city: str, days: int = 1) -> str:
        \"\"\"Forecast for a city. Use for questions about weather; not for climate history.

        Args:
            city: City name, e.g. "Lisbon".
            days: How many days ahead, 1 to 7.
        \"\"\"

The signature is the JSON schema (through pydantic), the docstring is the description and
its ``Args:`` section describes the parameters. A parameter annotated
:class:`ToolContext` is filled in by the runner and hidden from the model. Sync functions
run in a worker thread so they never block the loop.
"""

from __future__ import annotations

import inspect
import json
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, overload

import pydantic
from pydantic import BaseModel, ConfigDict

from .cancel import CancelToken
from .errors import ConfigError
from .provider import ToolDefinition
from .subjects import Subject
from .sync_tools import sync_tool_runner
from .tool_results import DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_OUTPUT_CHARS

__all__ = ["Tool", "ToolContext", "Toolset", "tool"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_TIMEOUT: Final = "default"
"""``Tool(timeout=DEFAULT_TIMEOUT)`` (the default): the agent's ``limits.tool_timeout_s``."""

Timeout = float | None | Literal["default"]


@dataclass(slots=True)
class ToolContext:
    """What the runner hands a tool that asks for it (a parameter annotated ``ToolContext``).

    ``idempotency_key`` is stable for a given session and tool call id. The loop never
    runs a call twice (a failed model call is retried, a tool call is not; the one
    exception is a call started early, see :mod:`tether.early_dispatch`); a durable
    runner that re-runs a call interrupted by a crash passes the same key, so a tool that
    deduplicates its side effects on it acts once.
    ``state`` is shared by all tool calls of one run. ``env`` holds the variables a tool
    should pass to subprocesses (never modify ``os.environ``). ``deps`` is whatever the
    application passed as ``Agent(deps=...)``. ``scope`` is the calling run (a
    :class:`~tether.scope.RunScope`): its remaining budget, a way to charge usage to it
    and to send events into its stream (sub-agents use it).
    """

    call_id: str
    tool_name: str
    session_id: str
    idempotency_key: str
    cwd: Path
    cancel: CancelToken
    state: MutableMapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    deps: Any = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    report_progress: Callable[[float, float | None, str | None], None] | None = None
    """``report_progress(progress, total, message)``: each report becomes a
    :class:`~tether.events.ToolProgress` event in the run's stream while the call runs."""
    scope: Any = None


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class Tool:
    """A callable the model can use. Build one with :func:`tool`.

    ``timeout`` (seconds) stops a call that runs longer; by default it is the agent's
    ``limits.tool_timeout_s`` (300 s), and ``timeout=None`` turns it off for this tool.
    ``sequential`` tools never run in parallel with other calls of the same response.
    ``read_only`` says the tool changes nothing (it only reads or looks things up);
    ``early`` says whether a call may start while the model's response is still
    streaming (see :mod:`tether.early_dispatch`): by default read-only tools may,
    others may not; ``early=True``/``False`` decides it for this tool.
    ``max_output_chars`` caps the text of a result (all its text blocks together, head
    and tail kept around a visible marker) and ``max_image_bytes`` its inline images
    (see :mod:`tether.tool_results`). Sync functions run on
    :func:`~tether.sync_tools.sync_tool_runner`'s threads.
    ``subjects`` declares what arguments mean to approval rules (a path, a command line;
    see :mod:`tether.subjects`), by parameter name.
    """

    __slots__ = (
        "_arguments_model",
        "_context_param",
        "_is_async",
        "description",
        "early",
        "fn",
        "max_image_bytes",
        "max_output_chars",
        "name",
        "parameters",
        "read_only",
        "sequential",
        "subjects",
        "timeout",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        sequential: bool = False,
        max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
        max_image_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES,
        read_only: bool = False,
        early: bool | None = None,
        subjects: Mapping[str, Subject] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ValueError(
                f"Tool name {self.name!r} is not valid: use 1-64 letters, digits, '_' or '-'."
            )
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        self.description = description if description is not None else summary
        self.timeout = timeout
        self.sequential = sequential
        self.read_only = read_only
        self.early = early
        self.max_output_chars = max_output_chars
        self.max_image_bytes = max_image_bytes
        self._is_async = inspect.iscoroutinefunction(fn)
        self._context_param, self._arguments_model = _arguments_model(fn, self.name, arg_docs)
        self.parameters: dict[str, Any] = _clean_schema(self._arguments_model.model_json_schema())
        self.subjects: dict[str, Subject] = dict(subjects or {})
        unknown = [n for n in self.subjects if n not in self.parameters.get("properties", {})]
        if unknown:
            raise ConfigError(
                f"Tool {self.name!r} declares subjects for {', '.join(map(repr, unknown))}, "
                f"which are not among its parameters ({', '.join(self.parameters.get('properties', {})) or 'none'})."
            )

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"

    @property
    def starts_early(self) -> bool:
        """Whether a call may start before the response that asks for it has ended:
        ``early`` if set, else ``read_only``; never for ``sequential`` tools."""
        if self.sequential:
            return False
        return self.early if self.early is not None else self.read_only

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, self.description, self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments, or :class:`pydantic.ValidationError`."""
        model = self._arguments_model.model_validate(arguments)
        return {name: getattr(model, name) for name in type(model).model_fields}

    async def call(self, arguments: Mapping[str, Any], context: ToolContext | None) -> Any:
        """Run the tool with already validated ``arguments``; returns its raw result."""
        kwargs = dict(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = context
        if self._is_async:
            return await self.fn(**kwargs)
        return await sync_tool_runner().run(self.fn, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (handy in tests)."""
        return self.fn(*args, **kwargs)


@overload
def tool(fn: F, /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    sequential: bool = False,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
    max_image_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES,
    read_only: bool = False,
    early: bool | None = None,
    subjects: Mapping[str, Subject] | None = None,
) -> Callable[[F], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    sequential: bool = False,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
    max_image_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES,
    read_only: bool = False,
    early: bool | None = None,
    subjects: Mapping[str, Subject] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a :class:`Tool`; usable bare or with options."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name=name,
            description=description,
            timeout=timeout,
            sequential=sequential,
            max_output_chars=max_output_chars,
            max_image_bytes=max_image_bytes,
            read_only=read_only,
            early=early,
            subjects=subjects,
        )

    return wrap(fn) if fn is not None else wrap


class Toolset:
    """A named group of tools, enabled together by name (``tools = ["fs"]`` in config).

    A *dynamic* toolset (``dynamic = True``, e.g. one backed by an MCP server) has tools
    that are only known at run time and may change during a run. The runner awaits
    :meth:`refresh` before every model call; whenever the toolset's :attr:`version`
    changed since the run last looked, it offers the model the toolset's current
    :attr:`tools` from that turn on. :meth:`aclose` is awaited by ``Agent.aclose()``.
    """

    dynamic: bool = False
    """Whether :meth:`refresh` must be awaited before each model call."""

    def __init__(
        self, name: str, tools: Iterable[Tool | Callable[..., Any]], description: str = ""
    ):
        self.name = name
        self.description = description
        self.tools: list[Tool] = [as_tool(t) for t in tools]
        self.version = 0
        """Increased by a dynamic toolset each time :attr:`tools` changes."""
        self.problem: str | None = None
        """Why a dynamic toolset currently has no tools (shown by ``tether plugins``)."""

    async def refresh(self) -> None:
        """Bring :attr:`tools` up to date (dynamic toolsets only).

        Called before every model call, so it must return at once when nothing changed.
        The first call may start what the toolset depends on (a server). It must not
        raise for an unavailable backend: it leaves :attr:`tools` empty and says why in
        :attr:`problem`, and the agent runs without those tools.
        """

    async def aclose(self) -> None:
        """Release what the toolset holds (servers, connections). Safe to call twice."""

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __repr__(self) -> str:
        return f"<Toolset {self.name}: {', '.join(t.name for t in self.tools)}>"


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """``obj`` if it is a Tool, else a Tool built from the plain function."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return Tool(obj)
    raise TypeError(f"Expected a tether.Tool or a function, got {type(obj).__name__}.")


def format_validation_error(tool: Tool, error: pydantic.ValidationError) -> str:
    """An error text for the model: each wrong field, and the schema it must follow."""
    lines = [f"Invalid arguments for tool `{tool.name}`:"]
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        got = item.get("input")
        detail = item["msg"]
        if item["type"] not in ("missing", "extra_forbidden"):
            detail += f" (got {json.dumps(got, default=str)[:200]})"
        lines.append(f"- {where}: {detail}")
    lines.append(f"Expected arguments (JSON schema): {json.dumps(tool.parameters)}")
    return "\n".join(lines)


# -- schema building ---------------------------------------------------------------------
def _arguments_model(
    fn: Callable[..., Any], tool_name: str, arg_docs: Mapping[str, str]
) -> tuple[str | None, type[BaseModel]]:
    signature = inspect.signature(fn)
    try:
        hints = _type_hints(fn)
    except Exception as exc:
        raise TypeError(f"Cannot read the type hints of tool {tool_name!r}: {exc}") from exc
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"Tool {tool_name!r} takes *{param.name}; tools need named, typed parameters."
            )
        default = ... if param.default is param.empty else param.default
        description = arg_docs.get(param.name)
        fields[param.name] = (annotation, pydantic.Field(default, description=description))
    model = pydantic.create_model(f"{tool_name}_arguments", __base__=_Arguments, **fields)
    return context_param, model


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Parameter annotations, resolved. The return annotation is not needed, so a return
    type that cannot be resolved (a class local to a test function) is no error."""
    import typing

    try:
        return typing.get_type_hints(fn, include_extras=True)
    except NameError:
        annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"}
        holder = type(
            "_Parameters", (), {"__annotations__": annotations, "__module__": fn.__module__}
        )
        return typing.get_type_hints(
            holder, globalns=getattr(fn, "__globals__", None), include_extras=True
        )


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s{0,8}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description})."""
    lines = doc.splitlines()
    header = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line.strip())), None)
    if header is None:
        return doc.strip(), {}
    index = header
    description = "\n".join(lines[:index]).strip()
    section: list[str] = []
    for line in lines[index + 1 :]:
        if line.strip() and not line[0].isspace():
            break  # the next section (Returns:, Raises:, ...) starts
        section.append(line)
    args: dict[str, str] = {}
    current: str | None = None
    for line in textwrap.dedent("\n".join(section)).splitlines():
        match = _ARG_LINE.match(line) if line and not line[0].isspace() else None
        if match is not None:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None and line.strip():
            args[current] = f"{args[current]} {line.strip()}".strip()
    return description, args
