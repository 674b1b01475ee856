"""tether-tools: the built-in tool sets of tether.

- ``fs``: :func:`read_file`, :func:`write_file`, :func:`edit_file`, :func:`list_dir`,
  :func:`glob`, :func:`grep`, confined to a workspace root.
- ``shell``: :func:`run_command`, behind :func:`check_command`.
- ``web``: :func:`web_fetch` and :func:`web_search`.

Enable them by name: ``tools = ["fs", "shell", "web"]`` in ``tether.toml`` or
``Agent(tools=["fs"])``. Importing this package is cheap: httpx, BeautifulSoup and
markdownify load on first use.
"""

from __future__ import annotations

from .fs import Workspace, edit_file, glob, grep, list_dir, read_file, write_file
from .shell import CommandPolicy, Decision, check_command, run_command
from .web import web_fetch, web_search

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
