"""Approvals: whether a tool call may run — ``allow``, ``ask`` a person, or ``deny``.

A :class:`Policy` is a list of rules read from configuration or given per Agent::

    [permissions]
    mode = "accept-edits"                      # a named preset (see PRESETS)
    [permissions.rules]
    "shell" = "ask"                            # a toolset or a tool, by name
    "run_command(git status*)" = "allow"       # ... whose first text argument matches
    "write_file(docs/**)" = "allow"
    "web_fetch(url=https://internal.*)" = "deny"   # ... a named argument
    "*" = "ask"                                # everything else

Patterns are shell-style globs (``*`` also matches ``/``) over the named argument, else
the tool's first declared subject, else its first text argument. A tool's subjects
(:mod:`tether.subjects`) make rules see meaning, not spelling: a path argument is
resolved against the workspace first (``docs/../src/x`` is ``src/x``; outside the
workspace no ``allow`` pattern matches), a command line is decided per program it runs
(a ``deny`` matching any of them denies the line, ``allow`` must cover every one) and a
line that cannot be read is never allowed.

The most specific matching rule wins: a rule with a pattern beats a bare tool name,
which beats a toolset name, which beats ``*``; among equally specific rules ``deny``
beats ``ask`` beats ``allow``. With no matching rule a call is allowed.

``ask`` goes to the approval callback (``Agent(approval=...)``, sync or async), which
returns an :class:`Approval` (or ``True``/``False``, or ``"allow"``/``"deny"``/``"always"``).
Without a callback the run is suspended: see :meth:`tether.Agent.resume`.
"""

from __future__ import annotations

import fnmatch
import inspect
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeAlias

from .errors import ConfigError, UnreadableCommand
from .messages import Message, ToolCallBlock, ToolResultBlock
from .result import PendingCall
from .subjects import (
    CommandSubject,
    Invocation,
    PathSubject,
    ResolvedPath,
    Subject,
    command_matches,
    path_matches,
    resolve_path,
)

__all__ = [
    "PRESETS",
    "Approval",
    "ApprovalCallback",
    "ApprovalRequest",
    "Gate",
    "Permission",
    "Policy",
    "Rule",
    "normalize_approval",
]


class Permission(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


_STRENGTH = {Permission.ALLOW: 0, Permission.ASK: 1, Permission.DENY: 2}

READ_ONLY_TOOLS = (
    "read_file",
    "list_dir",
    "glob",
    "grep",
    "web_fetch",
    "web_search",
    "load_skill",
)
EDIT_TOOLS = ("write_file", "edit_file")

PRESETS: Mapping[str, Mapping[str, str]] = {
    "default": {},
    "read-only": {**dict.fromkeys(READ_ONLY_TOOLS, "allow"), "*": "deny"},
    "ask": {**dict.fromkeys(READ_ONLY_TOOLS, "allow"), "*": "ask"},
    "accept-edits": {
        **dict.fromkeys(READ_ONLY_TOOLS, "allow"),
        **dict.fromkeys(EDIT_TOOLS, "allow"),
        "*": "ask",
    },
}
"""Named permission modes. ``default`` allows everything; ``read-only`` denies every tool
but the read-only built-ins; ``ask`` asks before any other tool; ``accept-edits`` also
lets file edits through without asking."""

_RULE = re.compile(r"^\s*(?P<name>\*|[A-Za-z0-9_.-]+)\s*(?:\((?P<pattern>.*)\))?\s*$", re.S)
_NAMED = re.compile(r"^(?P<arg>[A-Za-z_][A-Za-z0-9_]*)=(?P<glob>.*)$", re.S)


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule: ``name`` (tool, toolset or ``*``), an optional argument glob."""

    text: str
    name: str
    permission: Permission
    pattern: str | None = None
    argument: str | None = None

    @classmethod
    def parse(cls, text: str, permission: str | Permission) -> Rule:
        match = _RULE.match(text)
        if match is None:
            raise ConfigError(
                f"Permission rule {text!r} is not valid. Write a tool or toolset name, "
                'optionally with an argument pattern: "shell", "run_command(git status*)", '
                '"write_file(path=docs/**)", or "*".'
            )
        try:
            value = Permission(permission)
        except ValueError:
            raise ConfigError(
                f"Permission rule {text!r} = {permission!r}: use allow, ask or deny."
            ) from None
        pattern = match.group("pattern")
        argument = None
        if pattern is not None:
            named = _NAMED.match(pattern)
            if named is not None:
                argument, pattern = named.group("arg"), named.group("glob")
        if match.group("name") == "*" and pattern is not None:
            raise ConfigError(f"Permission rule {text!r}: '*' takes no argument pattern.")
        return cls(text, match.group("name"), value, pattern, argument)

    def specificity(self, tool: str) -> int:
        if self.name == "*":
            return 0
        if self.pattern is not None:
            return 3
        return 2 if self.name == tool else 1

    def names(self, tool: str, toolset: str | None) -> bool:
        """Whether the rule is about ``tool`` (by its name, its toolset's, or ``*``)."""
        return self.name == "*" or self.name == tool or self.name == toolset

    def matches(
        self, tool: str, toolset: str | None, arguments: Mapping[str, Any], order: Sequence[str]
    ) -> bool:
        """Whether the rule matches the call, its pattern against the raw argument text
        (what :meth:`Policy.decide` does for tools that declare no subjects)."""
        if not self.names(tool, toolset):
            return False
        if self.pattern is None:
            return True
        value = _argument(arguments, order, self.argument)
        return value is not None and fnmatch.fnmatchcase(value, self.pattern)


def _argument(arguments: Mapping[str, Any], order: Sequence[str], name: str | None) -> str | None:
    """The named argument, or the first text argument in the tool's declared order."""
    if name is not None:
        value = arguments.get(name)
        return value if isinstance(value, str) else None
    for key in [*order, *arguments]:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return None


@dataclass(frozen=True, slots=True)
class _Call:
    """One call as the rules see it: its arguments read through the tool's subjects."""

    tool: str
    toolset: str | None
    arguments: Mapping[str, Any]
    order: Sequence[str]
    subjects: Mapping[str, Subject]
    paths: Mapping[str, ResolvedPath]
    command: str | None
    """The argument holding the command line decided per invocation (the first one)."""
    invocations: Sequence[Invocation] | None
    """What the command line runs; ``None``: unreadable (or no command argument)."""
    unreadable: bool

    def target(self, rule: Rule) -> str | None:
        if rule.argument is not None:
            return rule.argument
        return next(iter(self.subjects), None)

    def matches(self, rule: Rule, view: Invocation | None) -> bool:
        if not rule.names(self.tool, self.toolset):
            return False
        if rule.pattern is None:
            return True
        if not self.subjects:
            return rule.matches(self.tool, self.toolset, self.arguments, self.order)
        name = self.target(rule)
        value = self.arguments.get(name) if name is not None else None
        if name is None or not isinstance(value, str):
            return False
        allow = rule.permission is Permission.ALLOW
        if name in self.paths:
            return path_matches(rule.pattern, self.paths[name], allow=allow)
        if name == self.command:
            return command_matches(rule.pattern, value, view, allow=allow)
        if isinstance(self.subjects.get(name), CommandSubject):
            return not allow and command_matches(rule.pattern, value, None, allow=False)
        return fnmatch.fnmatchcase(value, rule.pattern)


@dataclass(frozen=True, slots=True)
class Policy:
    """Rules deciding each call's :class:`Permission`; see the module docstring."""

    rules: tuple[Rule, ...] = ()

    @classmethod
    def build(
        cls,
        mode: str | None = None,
        rules: Mapping[str, str] | None = None,
        *more: Mapping[str, str] | None,
    ) -> Policy:
        """The preset ``mode``, overlaid by ``rules`` then by each of ``more`` (a later
        mapping replaces an equal rule text of an earlier one)."""
        merged: dict[str, str] = {}
        if mode is not None:
            if mode not in PRESETS:
                raise ConfigError(
                    f'No permission mode named "{mode}". Available: {", ".join(PRESETS)}.'
                )
            merged.update(PRESETS[mode])
        for layer in (rules, *more):
            if layer:
                merged.update(layer)
        return cls(tuple(Rule.parse(text, value) for text, value in merged.items()))

    def decide(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        toolset: str | None = None,
        order: Sequence[str] = (),
        subjects: Mapping[str, Subject] | None = None,
        root: Path | str | None = None,
    ) -> tuple[Permission, Rule | None]:
        """The permission for one call, and the rule that decided it (``None``: no rule
        matched and the call is allowed).

        ``subjects`` are the tool's declared argument meanings (:mod:`tether.subjects`):
        path arguments are resolved against ``root`` (default: the current directory)
        before any pattern sees them; a command line is decided per invocation it runs —
        the strongest verdict of any invocation wins, so a ``deny`` matching one of them
        denies the line and ``allow`` needs every one allowed — and a line that cannot
        be read is never allowed (``ask`` at least) when any rule names the tool.
        """
        call = _read_call(tool, toolset, arguments, order, subjects or {}, root)
        views: Sequence[Invocation | None] = call.invocations if call.invocations else (None,)
        verdict: tuple[Permission, Rule | None] = (Permission.ALLOW, None)
        for view in views:
            best = self._best(call, view)
            permission = best.permission if best is not None else Permission.ALLOW
            if verdict[1] is None or _STRENGTH[permission] > _STRENGTH[verdict[0]]:
                verdict = (permission, best)
        if call.unreadable and verdict[0] is Permission.ALLOW:
            concerned = next((r for r in self.rules if r.names(tool, toolset)), None)
            if concerned is not None:
                return Permission.ASK, verdict[1] or concerned
        return verdict

    def _best(self, call: _Call, view: Invocation | None) -> Rule | None:
        best: Rule | None = None
        for rule in self.rules:
            if not call.matches(rule, view):
                continue
            if best is None:
                best = rule
                continue
            key = (rule.specificity(call.tool), _STRENGTH[rule.permission])
            if key > (best.specificity(call.tool), _STRENGTH[best.permission]):
                best = rule
        return best

    def with_rules(self, rules: Iterable[Rule]) -> Policy:
        return Policy((*self.rules, *rules))


def _read_call(
    tool: str,
    toolset: str | None,
    arguments: Mapping[str, Any],
    order: Sequence[str],
    subjects: Mapping[str, Subject],
    root: Path | str | None,
) -> _Call:
    paths: dict[str, ResolvedPath] = {}
    command: str | None = None
    invocations: Sequence[Invocation] | None = None
    unreadable = False
    for name, subject in subjects.items():
        value = arguments.get(name)
        if not isinstance(value, str):
            continue
        if isinstance(subject, PathSubject):
            paths[name] = resolve_path(value, root if root is not None else os.getcwd())
        elif command is None:
            command = name
            try:
                invocations = list(subject.split(value))
            except UnreadableCommand:
                unreadable = True
    return _Call(tool, toolset, arguments, order, subjects, paths, command, invocations, unreadable)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for a person's decision."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    rule: str | None
    session_id: str
    subject: str | None = None
    """The argument the rule was matched against (e.g. the shell command), for prompts."""

    def describe(self) -> str:
        if self.subject is not None:
            return f"{self.tool}({self.subject})"
        return self.tool


@dataclass(frozen=True, slots=True)
class Approval:
    """A decision on one call. ``always`` allows the same tool without asking again for
    the rest of the session (for this agent)."""

    allow: bool
    reason: str | None = None
    always: bool = False

    @classmethod
    def yes(cls, *, always: bool = False) -> Approval:
        return cls(True, always=always)

    @classmethod
    def no(cls, reason: str | None = None) -> Approval:
        return cls(False, reason)


ApprovalResult: TypeAlias = Approval | bool | str
ApprovalCallback: TypeAlias = Callable[
    [ApprovalRequest], ApprovalResult | Awaitable[ApprovalResult]
]


def normalize_approval(value: Any) -> Approval:
    """An :class:`Approval` from what a callback or ``resume`` was given."""
    if isinstance(value, Approval):
        return value
    if isinstance(value, bool):
        return Approval(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("allow", "y", "yes", "approve", "approved"):
            return Approval(True)
        if lowered in ("always", "a"):
            return Approval(True, always=True)
        if lowered in ("deny", "n", "no", "denied"):
            return Approval(False)
    raise ConfigError(
        f"An approval decision must be an Approval, True/False, or 'allow'/'deny'/'always'; "
        f"got {value!r}."
    )


async def ask(callback: ApprovalCallback, request: ApprovalRequest) -> Approval:
    """Call a sync or async approval callback and normalise its answer."""
    value = callback(request)
    if inspect.isawaitable(value):
        value = await value
    return normalize_approval(value)


@dataclass(slots=True)
class SessionGrants:
    """Tools a person allowed "always" for a session, per session id."""

    by_session: dict[str, set[str]] = field(default_factory=dict)

    def allowed(self, session_id: str, tool: str) -> bool:
        return tool in self.by_session.get(session_id, ())

    def grant(self, session_id: str, tool: str) -> None:
        self.by_session.setdefault(session_id, set()).add(tool)


def subject_of(
    rule: Rule | None,
    arguments: Mapping[str, Any],
    order: Sequence[str],
    subjects: Sequence[str] = (),
) -> str | None:
    """The argument value a prompt should show for a call: the one the rule names, else
    the tool's first declared subject, else its first text argument."""
    name = rule.argument if rule is not None else None
    if name is None and subjects:
        name = subjects[0]
    return _argument(arguments, order, name)


PENDING_KEY = "pending_approval"
"""``meta`` key of the tool message a suspended run leaves: the ids of the calls waiting."""

WAITING = "Not run yet: this call is waiting for a person to approve it."


@dataclass(slots=True)
class Review:
    """The verdict on one response's calls: pre-decided results of denied calls, and the
    calls still waiting for a decision (non-empty: the run suspends)."""

    denied: dict[str, ToolResultBlock] = field(default_factory=dict)
    pending: list[PendingCall] = field(default_factory=list)


class Gate:
    """Applies a :class:`Policy` to a response's calls, asking the callback when a rule
    says ``ask``. One per run; ``grants`` outlive it (one per agent)."""

    def __init__(
        self,
        policy: Policy,
        *,
        callback: ApprovalCallback | None,
        grants: SessionGrants,
        session_id: str,
        toolsets: Mapping[str, str],
        orders: Mapping[str, Sequence[str]],
        tools: Mapping[str, Any] | None = None,
        cwd: Path | str | None = None,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.policy = policy
        self.callback = callback
        self.grants = grants
        self.session_id = session_id
        self.toolsets = toolsets
        self.orders = orders
        self.tools: Mapping[str, Any] = tools if tools is not None else {}
        """The run's tools by name (read when deciding: their declared subjects)."""
        self.cwd = Path(cwd) if cwd is not None else None
        self.settings: Mapping[str, Mapping[str, Any]] = settings or {}

    def root(self, tool: str) -> Path:
        """The workspace a tool's path arguments are resolved against: ``root`` in its
        settings (relative to the agent's working directory), else that directory."""
        base = self.cwd if self.cwd is not None else Path.cwd()
        configured = self.settings.get(tool, {}).get("root")
        return base / configured if isinstance(configured, str) and configured else base

    def decide(self, call: ToolCallBlock) -> tuple[Permission, Rule | None]:
        """The policy's verdict on ``call``, its arguments read through the tool's
        declared subjects (an omitted subject argument takes its schema default)."""
        tool = self.tools.get(call.name)
        subjects: Mapping[str, Subject] = getattr(tool, "subjects", None) or {}
        arguments: Mapping[str, Any] = call.arguments
        if subjects:
            properties = getattr(tool, "parameters", {}).get("properties", {})
            defaults = {
                name: properties[name]["default"]
                for name in subjects
                if name not in arguments and "default" in properties.get(name, {})
            }
            arguments = {**defaults, **arguments}
        return self.policy.decide(
            call.name,
            arguments,
            toolset=self.toolsets.get(call.name),
            order=self.orders.get(call.name, ()),
            subjects=subjects,
            root=self.root(call.name) if subjects else None,
        )

    async def review(
        self,
        calls: Sequence[ToolCallBlock],
        decisions: Mapping[str, Approval] | None = None,
    ) -> Review:
        """Decide every call in declared order. ``decisions`` (from ``resume``) answer
        ``ask`` calls instead of the callback."""
        review = Review()
        for call in calls:
            order = self.orders.get(call.name, ())
            permission, rule = self.decide(call)
            if permission is Permission.ALLOW:
                continue
            if permission is Permission.DENY:
                review.denied[call.id] = _denial(
                    call, f"Denied by the permission rule `{rule.text if rule else '*'}`."
                )
                continue
            if self.grants.allowed(self.session_id, call.name):
                continue
            decision = decisions.get(call.id) if decisions is not None else None
            if decision is None and self.callback is not None and decisions is None:
                request = ApprovalRequest(
                    call.id,
                    call.name,
                    call.arguments,
                    rule.text if rule else None,
                    self.session_id,
                    subject_of(
                        rule,
                        call.arguments,
                        order,
                        list(getattr(self.tools.get(call.name), "subjects", None) or ()),
                    ),
                )
                decision = await ask(self.callback, request)
            if decision is None:
                review.pending.append(
                    PendingCall(
                        call.id, call.name, dict(call.arguments), rule.text if rule else None
                    )
                )
                continue
            if decision.always and decision.allow:
                self.grants.grant(self.session_id, call.name)
            if not decision.allow:
                why = f" Reason: {decision.reason}" if decision.reason else ""
                review.denied[call.id] = _denial(call, f"Denied by the user.{why}")
        return review


def _denial(call: ToolCallBlock, why: str) -> ToolResultBlock:
    return ToolResultBlock(
        call_id=call.id,
        content=f"{why} The call `{call.name}` was not run. Do not retry it; continue "
        "without it or ask the user what to do.",
        is_error=True,
    )


def waiting_message(calls: Sequence[ToolCallBlock], pending: Sequence[PendingCall]) -> Message:
    """The tool message a suspended run leaves: every call answered with a placeholder
    (so the history stays valid), the waiting call ids in ``meta``."""
    message = Message.tool(
        ToolResultBlock(call_id=call.id, content=WAITING, is_error=True) for call in calls
    )
    setattr(message.meta, PENDING_KEY, [p.call_id for p in pending])
    return message


def pending_of(messages: Sequence[Message]) -> tuple[list[ToolCallBlock], list[str]] | None:
    """The calls of a suspended run at the end of ``messages`` and the ids waiting, or
    ``None`` if the history does not end in a suspension."""
    if len(messages) < 2 or messages[-1].role != "tool":
        return None
    waiting = getattr(messages[-1].meta, PENDING_KEY, None)
    if not waiting:
        return None
    return messages[-2].tool_calls, list(waiting)
