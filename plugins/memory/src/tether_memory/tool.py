"""The ``memory`` tool: how the model writes cross-session memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tether.errors import CrossSessionMemoryError, ToolError
from tether.provenance import untrusted_origins
from tether.tools import Tool, ToolContext

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = ["DESCRIPTION", "memory_tool"]

DESCRIPTION = """\
Save durable notes that are added to the system prompt of your future sessions (not this \
one): the user profile (who the user is, how they like to work) and the facts of the \
current project (conventions, commands, decisions).

Worth remembering: corrections the user gave you, stated preferences, durable decisions \
and facts that will matter again in later sessions. Not worth remembering: the state of \
the current task, one-off debugging details, anything quickly re-read from the code or \
docs, and never secrets.

Write short, factual entries in the third person ("Prefers pytest over unittest"). Each \
target has a hard size cap; when a write is refused for size, consolidate: merge related \
entries with `replace` or `remove` stale ones, then retry. Entries that repeat an existing \
one are merged. Every write is scanned and refused if it contains instructions aimed at an \
assistant, asks to send secrets anywhere, or hides invisible characters."""


def memory_tool(store: MemoryStore) -> Tool:
    """A ``memory`` tool writing to ``store``. Refusals come back to the model as error
    results whose text says why and what to do. A write made after the run showed the
    model untrusted content (see :mod:`tether.provenance`) is marked with that origin."""

    def memory(
        action: Literal["add", "replace", "remove"],
        target: Literal["user", "project"],
        ctx: ToolContext,
        text: str = "",
        old: str = "",
    ) -> str:
        """Write cross-session memory.

        Args:
            action: "add" a new entry (`text`); "replace" the exact substring `old`, which must occur once, with `text` (empty `text` deletes it); "remove" the entry containing `old`.
            target: "user" for the user profile, "project" for facts about this project.
            text: The entry to add, or the replacement text.
            old: For replace and remove: an exact substring of one existing entry.
        """
        origins = untrusted_origins(ctx)
        if text and origins:
            # Written after untrusted content reached the model: say where it came from.
            text = f"{text.rstrip()} [written after reading {origins[-1]}]"
        try:
            if action == "add":
                result = store.add(target, text)
            elif action == "replace":
                result = store.replace(target, old, text)
            else:
                result = store.remove(target, old)
        except CrossSessionMemoryError as exc:  # refusals, and a disk that refused the write
            raise ToolError(str(exc)) from exc
        return result.message

    return Tool(memory, name="memory", description=DESCRIPTION, sequential=True)
