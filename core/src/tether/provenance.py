"""Where the content a run has seen came from, for writes that must say so.

A tool that hands the model text from outside the conversation (a web page, a file, a
command's output) records it with :func:`mark_untrusted`; a tool that persists what the
model writes (the ``memory`` tool) reads :func:`untrusted_origins` and marks the write
with its origin, so a later session can tell a user's stated preference from something
that arrived in a web page. The record lives in ``ToolContext.state``: one run, all its
tool calls.
"""

from __future__ import annotations

from typing import Any

__all__ = ["mark_untrusted", "untrusted_origins"]

_KEY = "tether.untrusted_origins"
_KEEP = 20


def mark_untrusted(ctx: Any, origin: str) -> None:
    """Record that this run has shown the model content from ``origin`` (e.g.
    ``"web page https://example.com/"``, ``"file notes.md"``). Keeps the latest 20."""
    origins = ctx.state.setdefault(_KEY, [])
    if origin in origins:
        origins.remove(origin)
    origins.append(origin)
    del origins[:-_KEEP]


def untrusted_origins(ctx: Any) -> list[str]:
    """Every origin recorded in this run so far, oldest first."""
    return list(ctx.state.get(_KEY, ()))
