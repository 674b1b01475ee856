"""The entry point of ``tether-tools``: registers the ``fs``, ``shell`` and ``web``
toolsets through ``register_tools``, exactly as a third-party tool plugin would."""

from __future__ import annotations

from tether.hookspecs import hookimpl
from tether.registry import ToolRegistrar
from tether.tools import Toolset

from .fs import edit_file, glob, grep, list_dir, read_file, write_file
from .shell import run_command
from .web import web_fetch, web_search

__all__ = ["FS", "SHELL", "WEB", "register_tools"]

FS = Toolset(
    "fs",
    [read_file, write_file, edit_file, list_dir, glob, grep],
    description="Read, write, edit and search files inside the workspace root.",
)
SHELL = Toolset("shell", [run_command], description="Run policed shell commands in the workspace.")
WEB = Toolset(
    "web", [web_fetch, web_search], description="Fetch public web pages and search the web."
)


@hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    tools.add(FS)
    tools.add(SHELL)
    tools.add(WEB)
