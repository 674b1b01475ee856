"""The ``shell`` toolset: reports (in ``tether plugins``) when its OS sandbox is missing."""

from __future__ import annotations

from tether.tools import Toolset

from .sandbox import sandbox_status

__all__ = ["ShellToolset"]


class ShellToolset(Toolset):
    """A :class:`~tether.tools.Toolset` whose :attr:`problem` says, when asked, that
    commands cannot be sandboxed here (probing ``bwrap`` once per process)."""

    @property
    def problem(self) -> str | None:
        status = sandbox_status()
        if status.available:
            return None
        return (
            f"no OS sandbox: {status.reason}. run_command refuses every command unless "
            '[tool_settings.shell] sandbox = "none"; install bubblewrap to sandbox them'
        )

    @problem.setter
    def problem(self, value: str | None) -> None:
        """Set by :class:`Toolset`'s constructor; the sandbox decides instead."""
