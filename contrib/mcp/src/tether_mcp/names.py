"""Tool names as the model sees them: ``SERVER__tool``, within provider limits.

Providers accept 1-64 characters from ``[A-Za-z0-9_-]``. A server's tool name keeps its
allowed characters (others become ``_``); a name that would be too long is cut and ends
in a short hash of the original, so distinct tools keep distinct names.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "SEPARATOR", "tool_name"]

MAX_NAME = 64
SEPARATOR = "__"
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The tether name of ``tool`` on ``server``: stable, valid and at most 64 characters."""
    name = f"{server}{SEPARATOR}{_BAD.sub('_', tool)}"
    if len(name) <= MAX_NAME and name == f"{server}{SEPARATOR}{tool}":
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    head = name[: MAX_NAME - len(digest) - 1]
    return f"{head}_{digest}"
