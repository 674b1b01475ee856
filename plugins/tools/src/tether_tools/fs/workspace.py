"""Confinement of file paths to a workspace root.

Every path a file tool receives from the model goes through :meth:`Workspace.resolve`,
which answers with a real path (symlinks resolved) inside the root or raises a
:class:`~tether.errors.ToolError` the model can act on. The rules:

- The root is resolved once (``realpath``); containment is decided on resolved paths by
  comparing path components, so ``/srv/project-evil`` is not inside ``/srv/project``.
- Relative paths are joined to the root; absolute paths are accepted only when they
  resolve inside it. ``a/../b`` is fine as long as the result stays inside.
- Symlinks are followed, dangling ones included (a link whose target does not exist yet
  would let a write create a file outside), and the *target* must be inside.
- ``/proc``, ``/sys`` and ``/dev`` are refused even under a root that contains them, and
  so is anything that is not a regular file or a directory (devices, FIFOs, sockets).

What this cannot prevent: a directory inside the root being swapped for a symlink by
another process between the check and the open (the final component is opened with
``O_NOFOLLOW`` where tools open files), and hard links made by someone else. Run the
agent in a container when the workspace itself is untrusted.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.errors import ConfigError, ToolError
from tether.tools import ToolContext

__all__ = ["Workspace"]

_FORBIDDEN_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))


@dataclass(frozen=True, slots=True)
class Workspace:
    """A resolved root directory that file paths must stay inside."""

    root: Path

    @classmethod
    def from_context(cls, ctx: ToolContext) -> Workspace:
        """The workspace of a tool call: ``root`` from the tool's settings (relative to the
        agent's working directory), else the working directory itself."""
        configured: Any = ctx.settings.get("root")
        if configured is not None and not isinstance(configured, str):
            raise ConfigError(f"[tool_settings.fs] root must be a path string, got {configured!r}.")
        base = Path(ctx.cwd)
        root = base / configured if configured else base
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise ConfigError(
                f"The file tools' workspace root {root} is not a directory. "
                "Set [tool_settings.fs] root to an existing directory."
            )
        return cls(real)

    def resolve(self, path: str, *, must_exist: bool = True, kind: str = "any") -> Path:
        """The real path for ``path`` inside the root.

        :param must_exist: raise if nothing exists there.
        :param kind: ``"file"``, ``"dir"`` or ``"any"``: what an existing path must be.
        :raises ToolError: the path escapes the root, is special, missing or of the wrong kind.
        """
        if not path or "\x00" in path:
            raise ToolError(
                "The path is empty or contains a NUL byte. Give a path relative to the workspace root."
            )
        if kind == "file" and (path.endswith(("/", "/.")) or path == "."):
            raise ToolError(
                f"{path!r} ends with `/`, so it names a directory, not a file. Give the file's "
                'name, e.g. "notes/todo.md".'
            )
        if path.startswith("~"):
            raise ToolError(
                f"Refused {path!r}: `~` means the home directory, which is outside the workspace. "
                f"Use a path relative to the workspace root ({self.root})."
            )
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        if not self.contains(real):
            raise ToolError(self._outside_message(path, candidate, real))
        if any(real == tree or real.is_relative_to(tree) for tree in _FORBIDDEN_TREES):
            raise ToolError(
                f"Refused {path!r}: {real} is a system pseudo-file or device, not a workspace file."
            )
        try:
            info = real.stat()
        except FileNotFoundError:
            if must_exist:
                raise ToolError(
                    f"{self.display(real)} does not exist. Check the path with list_dir or glob."
                ) from None
            return real
        except OSError as exc:
            raise ToolError(f"Cannot access {self.display(real)}: {exc.strerror}.") from None
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            raise ToolError(
                f"Refused {path!r}: it is a device, FIFO or socket, not a regular file or directory."
            )
        if kind == "file" and stat.S_ISDIR(info.st_mode):
            raise ToolError(
                f"{self.display(real)} is a directory, not a file. Use list_dir to see its contents."
            )
        if kind == "dir" and not stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{self.display(real)} is a file, not a directory.")
        return real

    def contains(self, real: Path) -> bool:
        """Whether an already resolved path is the root or below it (component-wise)."""
        return real == self.root or real.is_relative_to(self.root)

    def display(self, real: Path) -> str:
        """A resolved path as the model should refer to it: relative to the root."""
        if real == self.root:
            return "."
        try:
            return real.relative_to(self.root).as_posix()
        except ValueError:
            return str(real)

    def _outside_message(self, path: str, candidate: Path, real: Path) -> str:
        lexical = Path(os.path.normpath(candidate))
        if lexical == self.root or lexical.is_relative_to(self.root):
            why = "it goes through a symbolic link that points outside the workspace"
        elif Path(path).is_absolute():
            why = "it is an absolute path outside the workspace"
        else:
            why = "it climbs out of the workspace with `..`"
        return (
            f"Refused {path!r}: {why}. The file tools only work inside the workspace root "
            f"{self.root}; use a path relative to it."
        )
