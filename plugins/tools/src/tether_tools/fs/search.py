"""``grep``: regular-expression search through workspace files."""

from __future__ import annotations

import re
from pathlib import Path

from tether.errors import ToolError
from tether.subjects import PATH
from tether.tools import ToolContext, tool

from ..settings import get_int
from .text import looks_binary
from .walk import compile_glob, walk_files
from .workspace import Workspace

__all__ = ["grep"]

DEFAULT_MAX_MATCHES = 200
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_LINE_CHARS = 300


@tool(read_only=True, subjects={"path": PATH})
def grep(
    pattern: str,
    ctx: ToolContext,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
) -> str:
    """Search file contents in the workspace with a regular expression.

    Use it to find where something is defined or used: a function name, an error
    message, a setting. Files ignored by .gitignore, the .git folder, binary files and
    very large files are skipped. Python regular expression syntax; escape special
    characters such as `(` or `.` to match them literally. To find files by name use glob.

    Example: {"pattern": "def (load|save)_config", "glob": "*.py"}

    Output: one match per line as `path:line: text`, at most a few hundred, with a note
    when more were found.

    Args:
        pattern: Python regular expression to look for in each line.
        path: File or folder to search, relative to the workspace root.
        glob: Only search files whose name (or path below `path`) matches, e.g. "*.py".
        ignore_case: Match letters regardless of case.
    """
    workspace = Workspace.from_context(ctx)
    base = workspace.resolve(path)
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc}. Escape special characters with a backslash."
        ) from None
    limit = get_int(ctx.settings, "grep", "max_matches", DEFAULT_MAX_MATCHES)
    max_file = get_int(ctx.settings, "grep", "max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    name_filter = compile_glob(glob) if glob else None
    files = [base] if base.is_file() else walk_files(workspace, base)
    results: list[str] = []
    total = 0
    for file in files:
        if name_filter is not None and not _name_matches(name_filter, file, base):
            continue
        for number, line in _matching_lines(file, regex, max_file):
            total += 1
            if len(results) < limit:
                text = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …"
                results.append(f"{workspace.display(file)}:{number}: {text}")
    if not results:
        return f"No matches for {pattern!r} under {workspace.display(base)}."
    if total > len(results):
        results.append(
            f"[... {total - len(results)} more matches not shown; narrow the pattern, path or glob]"
        )
    return "\n".join(results)


def _name_matches(matcher: re.Pattern[str], file: Path, base: Path) -> bool:
    if matcher.fullmatch(file.name):
        return True
    return base.is_dir() and matcher.fullmatch(file.relative_to(base).as_posix()) is not None


def _matching_lines(file: Path, regex: re.Pattern[str], max_file: int) -> list[tuple[int, str]]:
    try:
        if file.stat().st_size > max_file:
            return []
        data = file.read_bytes()
    except OSError:
        return []
    if looks_binary(data):
        return []
    text = data.decode("utf-8", errors="replace")
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if regex.search(line)]
