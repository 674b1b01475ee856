"""The shell tool: a policy checked before anything runs, an OS sandbox (bubblewrap) that
is the boundary, and a process runner that keeps the command, its children, its output
and its environment under control."""

from __future__ import annotations

from .environment import SECRET_PATTERNS, child_environment, is_secret_name
from .policy import CommandPolicy, Decision, check_command
from .tool import run_command

__all__ = [
    "SECRET_PATTERNS",
    "CommandPolicy",
    "Decision",
    "check_command",
    "child_environment",
    "is_secret_name",
    "run_command",
]
