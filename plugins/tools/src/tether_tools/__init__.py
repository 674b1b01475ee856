"""tether-tools: the built-in tool sets of tether.

- ``fs``: :func:`read_file`, :func:`write_file`, :func:`edit_file`, :func:`list_dir`,
  :func:`glob`, :func:`grep`, confined to a workspace root.
- ``shell``: :func:`run_command`, behind :func:`check_command`.
- ``web``: :func:`web_fetch` and :func:`web_search`.

Enable them by name: ``tools = ["fs", "shell", "web"]`` in ``tether.toml`` or
``Agent(tools=["fs"])``. Importing this package is cheap: the tools' modules load when a
name below is first used (httpx, BeautifulSoup and markdownify when a web tool runs).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fs import Workspace, edit_file, glob, grep, list_dir, read_file, write_file
    from .shell import CommandPolicy, Decision, check_command, run_command
    from .web import web_fetch, web_search

_LAZY = {
    "Workspace": "fs",
    "edit_file": "fs",
    "glob": "fs",
    "grep": "fs",
    "list_dir": "fs",
    "read_file": "fs",
    "write_file": "fs",
    "CommandPolicy": "shell",
    "Decision": "shell",
    "check_command": "shell",
    "run_command": "shell",
    "web_fetch": "web",
    "web_search": "web",
}

__all__ = [
    "CommandPolicy",
    "Decision",
    "Workspace",
    "check_command",
    "edit_file",
    "glob",
    "grep",
    "list_dir",
    "read_file",
    "run_command",
    "web_fetch",
    "web_search",
    "write_file",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
