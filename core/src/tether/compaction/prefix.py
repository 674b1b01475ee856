"""Measuring how cache-friendly a run's requests are.

Provider prompt caches hit only when a request starts with exactly the bytes of an
earlier one. Between compactions tether keeps the prefix (system prompt, tool
definitions, earlier messages) byte-identical; :func:`prefix_stability` measures it: for
each request after the first, is the previous request's whole prompt (its system
prompt, its tools and every message it sent, which are all stable by the time the
next request is made) an exact prefix of this one?

::

    provider = ScriptedProvider(handler=...)
    await agent.run("...")
    report = prefix_stability(provider.requests)
    assert report.ratio >= 0.95, report.breaks
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..messages import Message
from ..provider import ModelRequest, ToolDefinition

__all__ = ["PrefixStability", "PrefixTracker", "prefix_stability"]


@dataclass(slots=True)
class PrefixStability:
    """``stable`` of the ``compared`` requests (all but the first) kept the previous
    request's prompt as their prefix; ``breaks`` lists the indices of those that did not."""

    requests: int = 0
    compared: int = 0
    stable: int = 0
    breaks: list[int] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Share of compared requests whose prefix was stable (1.0 when none were compared)."""
        return self.stable / self.compared if self.compared else 1.0


class PrefixTracker:
    """Feed requests in the order they were made; read :attr:`report` at any time."""

    def __init__(self) -> None:
        self.report = PrefixStability()
        self._previous: tuple[str, str, list[str]] | None = None

    def add(self, request: ModelRequest) -> bool:
        """Record ``request``; return whether the previous request's prompt is its prefix."""
        current = (
            request.system,
            _tools_key(request.tools),
            [_message_key(m) for m in request.messages],
        )
        index = self.report.requests
        self.report.requests += 1
        previous, self._previous = self._previous, current
        if previous is None:
            return True
        self.report.compared += 1
        system, tools, messages = previous
        stable = (
            system == current[0]
            and tools == current[1]
            and len(messages) <= len(current[2])
            and current[2][: len(messages)] == messages
        )
        if stable:
            self.report.stable += 1
        else:
            self.report.breaks.append(index)
        return stable


def prefix_stability(requests: Iterable[ModelRequest]) -> PrefixStability:
    """Prefix stability of ``requests`` (in the order they were made)."""
    tracker = PrefixTracker()
    for request in requests:
        tracker.add(request)
    return tracker.report


def _message_key(message: Message) -> str:
    """What a provider sends for ``message``: its role and content, not its metadata."""
    return (
        message.role
        + "\x00"
        + json.dumps(
            [block.model_dump(mode="json", exclude_none=True) for block in message.content],
            sort_keys=True,
        )
    )


def _tools_key(tools: Sequence[ToolDefinition]) -> str:
    return json.dumps(
        [(t.name, t.description, t.parameters) for t in tools], sort_keys=True, default=str
    )
