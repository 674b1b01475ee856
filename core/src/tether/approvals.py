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

Patterns are shell-style globs over the whole argument value (``*`` also matches ``/``).
The most specific matching rule wins: a rule with a pattern beats a bare tool name, which
beats a toolset name, which beats ``*``; among equally specific rules ``deny`` beats
``ask`` beats ``allow``. With no matching rule a call is allowed.

``ask`` goes to the approval callback (``Agent(approval=...)``, sync or async), which
returns an :class:`Approval` (or ``True``/``False``, or ``"allow"``/``"deny"``/``"always"``).
Without a callback the run is suspended: see :meth:`tether.Agent.resume`.
"""

from __future__ import annotations

import fnmatch
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

from .errors import ConfigError

__all__ = [
    "PRESETS",
    "Approval",
    "ApprovalCallback",
    "ApprovalRequest",
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

    def matches(
        self, tool: str, toolset: str | None, arguments: Mapping[str, Any], order: Sequence[str]
    ) -> bool:
        if self.name != "*" and self.name != tool and self.name != toolset:
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
    ) -> tuple[Permission, Rule | None]:
        """The permission for one call, and the rule that decided it (``None``: no rule
        matched and the call is allowed)."""
        best: Rule | None = None
        for rule in self.rules:
            if not rule.matches(tool, toolset, arguments, order):
                continue
            if best is None:
                best = rule
                continue
            key = (rule.specificity(tool), _STRENGTH[rule.permission])
            if key > (best.specificity(tool), _STRENGTH[best.permission]):
                best = rule
        return (best.permission if best is not None else Permission.ALLOW), best

    def with_rules(self, rules: Iterable[Rule]) -> Policy:
        return Policy((*self.rules, *rules))


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


def subject_of(rule: Rule | None, arguments: Mapping[str, Any], order: Sequence[str]) -> str | None:
    """The argument value a prompt should show for a call (its first text argument)."""
    return _argument(arguments, order, rule.argument if rule is not None else None)
