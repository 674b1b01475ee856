"""``list_dir`` and ``glob``: finding files in the workspace."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from tether.errors import ToolError
from tether.subjects import PATH
from tether.tools import ToolContext, tool

from ..settings import get_int
from .walk import compile_glob, walk_files
from .workspace import Workspace

__all__ = ["glob", "list_dir"]

DEFAULT_MAX_ENTRIES = 500


@tool(read_only=True, subjects={"path": PATH})
def list_dir(ctx: ToolContext, path: str = ".") -> str:
    """List the entries of one folder in the workspace.

    Use it to get oriented in a project or to check that a file exists. It does not
    recurse: to find files by name pattern across folders use glob; to search inside
    files use grep.

    Example: {"path": "src"}

    Output: one entry per line, folders first and marked with a trailing `/`, files with
    their size, symbolic links with their target: `tests/`, `app.py  1.2 KB`,
    `latest -> releases/v2`.

    Args:
        path: Folder relative to the workspace root; "." is the root itself.
    """
    workspace = Workspace.from_context(ctx)
    real = workspace.resolve(path, kind="dir")
    limit = get_int(ctx.settings, "list_dir", "max_entries", DEFAULT_MAX_ENTRIES)
    try:
        entries = list(os.scandir(real))
    except OSError as exc:
        raise ToolError(f"Cannot list {workspace.display(real)}: {exc.strerror}.") from None
    folders: list[str] = []
    files: list[str] = []
    for entry in entries:
        if entry.is_symlink():
            target = os.readlink(entry.path)
            files.append(f"{entry.name} -> {target}")
        elif entry.is_dir(follow_symlinks=False):
            folders.append(f"{entry.name}/")
        else:
            try:
                size = entry.stat(follow_symlinks=False).st_size
            except OSError:
                size = 0
            files.append(f"{entry.name}  {_human(size)}")
    lines = sorted(folders, key=str.lower) + sorted(files, key=str.lower)
    header = f"{workspace.display(real)}/ · {len(folders)} folders, {len(files)} files"
    if not lines:
        return f"{workspace.display(real)}/ is empty."
    if len(lines) > limit:
        omitted = len(lines) - limit
        lines = [*lines[:limit], f"[... {omitted} more entries not shown]"]
    return "\n".join([header, *lines])


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


@tool(read_only=True, subjects={"path": PATH})
def glob(pattern: str, ctx: ToolContext, path: str = ".") -> str:
    """Find files whose path matches a glob pattern, anywhere under a folder.

    Use it to find files by name: "**/*.py" (every Python file), "src/**/test_*.py",
    "*.md" (Markdown files directly in the folder). Files ignored by .gitignore and the
    .git folder are skipped. Use grep to search file contents, list_dir for one folder.

    Example: {"pattern": "**/*.toml"}

    Output: matching file paths relative to the workspace root, one per line, sorted.

    Args:
        pattern: Glob pattern relative to `path`; `**` matches any number of folders.
        path: Folder to search from, relative to the workspace root.
    """
    workspace = Workspace.from_context(ctx)
    base = workspace.resolve(path, kind="dir")
    if pattern.startswith(("/", "~")) or ".." in PurePosixPath(pattern).parts:
        raise ToolError(
            f"Refused pattern {pattern!r}: patterns are relative to `path` and may not contain `..` "
            "or start with / or ~. Pass the folder as `path` instead."
        )
    limit = get_int(ctx.settings, "glob", "max_results", DEFAULT_MAX_ENTRIES)
    matcher = compile_glob(pattern)
    found: list[str] = []
    total = 0
    for file in walk_files(workspace, base):
        relative = file.relative_to(base).as_posix()
        if matcher.fullmatch(relative):
            total += 1
            if len(found) < limit:
                found.append(workspace.display(Path(file)))
    if not found:
        return f"No files match {pattern!r} under {workspace.display(base)}/."
    if total > len(found):
        found.append(f"[... {total - len(found)} more matches not shown; use a narrower pattern]")
    return "\n".join(found)
