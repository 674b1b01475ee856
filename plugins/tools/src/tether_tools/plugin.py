"""The entry point of ``tether-tools``: registers the ``fs``, ``shell`` and ``web``
toolsets through ``register_tools``, exactly as a third-party tool plugin would.

``fs`` and ``shell`` declare their settings, so a misspelt or wrongly typed key in
``[tool_settings.fs]`` (or ``.shell``, ``.read_file``, ...) fails at start. ``web`` does
not: a custom search backend (``backend = "package.module:factory"``) reads keys of its
own from the same section."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from tether import hookimpl
from tether.registry import ToolRegistrar

if TYPE_CHECKING:
    from tether.tools import Toolset

    FS: Toolset
    SHELL: Toolset
    WEB: Toolset

__all__ = ["FS", "FS_SETTINGS", "SHELL", "SHELL_SETTINGS", "WEB", "register_tools"]


@functools.cache
def _toolsets() -> dict[str, Toolset]:
    """The toolsets, built when first asked for: loading this plugin (every ``tether``
    process does) imports none of the tools' modules."""
    from tether.tools import Toolset

    from .fs import edit_file, glob, grep, list_dir, read_file, write_file
    from .shell import run_command
    from .shell.toolset import ShellToolset
    from .web import web_fetch, web_search

    return {
        "FS": Toolset(
            "fs",
            [read_file, write_file, edit_file, list_dir, glob, grep],
            description="Read, write, edit and search files inside the workspace root.",
        ),
        "SHELL": ShellToolset(
            "shell",
            [run_command],
            description="Run policed shell commands in an OS sandbox around the workspace.",
        ),
        "WEB": Toolset(
            "web", [web_fetch, web_search], description="Fetch public web pages and search the web."
        ),
    }


def __getattr__(name: str) -> Any:
    """``FS``, ``SHELL`` and ``WEB``, built on first use."""
    if name in ("FS", "SHELL", "WEB"):
        return _toolsets()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Count = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(ge=0)]

#: Keys of ``[tool_settings.fs]`` and of each file tool's own section, with their types.
FS_SETTINGS: dict[str, Any] = {
    "root": str,
    "max_read_bytes": Count,
    "max_lines": Count,
    "max_write_bytes": Count,
    "max_entries": Count,
    "max_results": Count,
    "max_matches": Count,
    "max_file_bytes": Count,
}

#: Keys of ``[tool_settings.shell]`` (and ``[tool_settings.run_command]``).
SHELL_SETTINGS: dict[str, Any] = {
    "root": str,
    "timeout": Seconds,
    "max_timeout": Seconds,
    "inherit_env": bool,
    "env_allow": list[str],
    "env_deny": list[str],
    "env": dict[str, str],
    "shell": str,
    "max_output_bytes": Count,
    "allow": list[str],
    "deny": list[str],
    "sandbox": Literal["bwrap", "none"],
    "network": Literal["off", "on"],
    "network_allow": list[str],
    "read_only_paths": list[str],
    "writable_paths": list[str],
    "cpu_seconds": Annotated[int, Field(ge=0)],
    "max_memory_mb": Annotated[int, Field(ge=0)],
    "max_processes": Annotated[int, Field(ge=0)],
}


@hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    from .shell.sandbox import warn_if_missing

    warn_if_missing()  # loudly, at start: without bwrap the shell refuses to run anything
    toolsets = _toolsets()
    tools.add(toolsets["FS"], settings=FS_SETTINGS)
    tools.add(toolsets["SHELL"], settings=SHELL_SETTINGS)
    tools.add(toolsets["WEB"])
