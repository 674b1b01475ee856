"""The compaction protocol and the ``none`` strategy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..messages import Message
from ..provider import ModelCapabilities, Provider, ToolDefinition

__all__ = ["CompactionContext", "CompactionResult", "CompactionStrategy", "NoCompaction"]


@dataclass(slots=True)
class CompactionContext:
    """What a strategy may look at.

    ``reported_input_tokens`` is the provider-reported prompt size of the most recent
    request, which covered the first ``reported_messages`` messages; estimates for the
    rest of the history should be anchored to it. ``force`` is set after the provider
    rejected a request as too long: the strategy must shorten the history or return None
    (the run then fails with ``ContextOverflowError``).
    """

    messages: Sequence[Message]
    system: str
    tools: Sequence[ToolDefinition]
    provider: Provider
    model: str
    capabilities: ModelCapabilities
    session_id: str
    reported_input_tokens: int | None = None
    reported_messages: int = 0
    force: bool = False


@dataclass(slots=True)
class CompactionResult:
    """The new history and the estimated prompt size before and after."""

    messages: list[Message]
    tokens_before: int
    tokens_after: int


@runtime_checkable
class CompactionStrategy(Protocol):
    name: str

    async def compact(self, context: CompactionContext) -> CompactionResult | None:
        """Return a shorter history, or ``None`` to keep the current one."""
        ...


class NoCompaction:
    """Never compacts. A context overflow then ends the run with ``ContextOverflowError``."""

    name = "none"

    def __init__(self, **settings: object) -> None:
        if settings:
            raise TypeError(
                f"The 'none' compaction strategy takes no settings, got {sorted(settings)}."
            )

    async def compact(self, context: CompactionContext) -> CompactionResult | None:
        return None
