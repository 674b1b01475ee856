"""``read_file``, ``write_file`` and ``edit_file``: text files inside the workspace."""

from __future__ import annotations

import difflib
from pathlib import Path

from tether.errors import ToolError
from tether.provenance import mark_untrusted
from tether.subjects import PATH
from tether.tools import ToolContext, tool

from ..settings import get_int
from .text import atomic_write, decode, describe_binary, looks_binary, read_bytes
from .workspace import Workspace

__all__ = ["edit_file", "read_file", "write_file"]

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_WRITE_BYTES = 5 * 1024 * 1024
MAX_LINE_CHARS = 2000


@tool(read_only=True, subjects={"path": PATH})
def read_file(
    path: str,
    ctx: ToolContext,
    start_line: int = 1,
    end_line: int | None = None,
    encoding: str | None = None,
) -> str:
    """Read a text file from the workspace, with line numbers.

    Use it to look at source code, configuration or notes before changing them. Do not
    use it to list folders (use list_dir) or to search many files (use grep). Large files
    are read in slices: pass start_line and end_line. Binary files (images, archives) are
    refused with a description of what they are.

    Example: {"path": "src/app.py", "start_line": 40, "end_line": 80}

    Output: a header line `src/app.py · lines 40-80 of 212 · utf-8`, then one line per
    file line as `<number><TAB><text>`.

    Args:
        path: File path relative to the workspace root, e.g. "src/app.py".
        start_line: First line to show, counting from 1.
        end_line: Last line to show (inclusive); omit to read as far as the limits allow.
        encoding: Text encoding such as "latin-1"; omit to detect it.
    """
    workspace = Workspace.from_context(ctx)
    real = workspace.resolve(path, kind="file")
    max_bytes = get_int(ctx.settings, "read_file", "max_read_bytes", DEFAULT_MAX_READ_BYTES)
    max_lines = get_int(ctx.settings, "read_file", "max_lines", DEFAULT_MAX_LINES)
    if start_line < 1:
        raise ToolError("start_line counts from 1.")
    if end_line is not None and end_line < start_line:
        raise ToolError(f"end_line ({end_line}) is before start_line ({start_line}).")
    size = real.stat().st_size
    head = read_bytes(real, max_bytes)
    if looks_binary(head):
        raise ToolError(
            f"{workspace.display(real)} is {describe_binary(head)} ({size} bytes), not text; read_file only shows text."
        )
    cut = False
    if size <= max_bytes:
        text, used = decode(head, encoding)
        lines = text.splitlines()
        total: int | None = len(lines)
        selected = lines[start_line - 1 : end_line]
    else:
        selected, used, cut = _stream_lines(real, start_line, end_line, max_bytes, encoding)
        total = None
    if start_line > 1 and not selected:
        known = f"it has {total} lines" if total is not None else "it has fewer lines"
        raise ToolError(
            f"{workspace.display(real)}: start_line {start_line} is past the end ({known})."
        )
    shown = selected[:max_lines]
    last = start_line + len(shown) - 1
    of = f" of {total}" if total is not None else ""
    header = f"{workspace.display(real)} · lines {start_line}-{last}{of} · {used}"
    if not shown:
        header = f"{workspace.display(real)} · empty file"
    body = [f"{start_line + i}\t{_clip(line)}" for i, line in enumerate(shown)]
    notes = []
    if cut:
        notes.append(
            f"[Line {start_line} is longer than {max_bytes} bytes; only its start was read, "
            f"and it is cut here. Continue with start_line={start_line + 1}.]"
        )
    elif len(selected) > len(shown) or (total is None and end_line is None):
        notes.append(
            f"[Showing at most {max_lines} lines or {max_bytes} bytes. "
            f"Continue with start_line={last + 1}.]"
        )
    elif total is not None and end_line is None and last < total:
        notes.append(f"[{total - last} more lines. Continue with start_line={last + 1}.]")
    mark_untrusted(ctx, f"the file {workspace.display(real)}")
    return "\n".join([header, *body, *notes])


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" … [line cut: {len(line)} characters]"


def _stream_lines(
    real: Path, start: int, end: int | None, max_bytes: int, encoding: str | None
) -> tuple[list[str], str, bool]:
    """Lines ``start..end`` of a file too big to read whole, reading at most ``max_bytes``
    of the selected lines (and never more than that of any one line). The flag is true
    when the first selected line alone is longer than ``max_bytes``: its start is returned."""
    chunks: list[bytes] = []
    taken = 0
    cut = False
    with real.open("rb") as handle:
        number = 0
        while raw := handle.readline(max_bytes + 1):
            number += 1
            complete = raw.endswith(b"\n") or len(raw) <= max_bytes
            if number < start:
                while not raw.endswith(b"\n") and raw:  # skip the rest of a long line
                    raw = handle.readline(1 << 20)
                continue
            if end is not None and number > end:
                break
            if not complete or taken + len(raw) > max_bytes:
                if not chunks:
                    chunks.append(_utf8_prefix(raw[:max_bytes]))
                    cut = True
                break
            chunks.append(raw)
            taken += len(raw)
    text, used = decode(b"".join(chunks), encoding)
    return text.splitlines(), used, cut


def _utf8_prefix(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut in half at its end (if it is UTF-8 at all)."""
    for drop in range(4):
        try:
            (data[: len(data) - drop] if drop else data).decode("utf-8")
        except UnicodeDecodeError:
            continue
        return data[: len(data) - drop] if drop else data
    return data


@tool(sequential=True, subjects={"path": PATH})
def write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Create a file, or replace a file's whole content, in the workspace.

    Use it for new files, or when rewriting most of a file. To change part of an existing
    file use edit_file instead: it is safer and cheaper. Missing parent folders are
    created. The write is atomic: the file has either its old or its new content, never
    half of each. Text is written as UTF-8.

    Example: {"path": "notes/todo.md", "content": "# Todo\\n- write tests\\n"}

    Output: `Created notes/todo.md (24 bytes, 2 lines).` or `Replaced ...`.

    Args:
        path: File path relative to the workspace root.
        content: The complete new content of the file.
    """
    workspace = Workspace.from_context(ctx)
    real = workspace.resolve(path, must_exist=False, kind="file")
    data = content.encode("utf-8")
    limit = get_int(ctx.settings, "write_file", "max_write_bytes", DEFAULT_MAX_WRITE_BYTES)
    if len(data) > limit:
        raise ToolError(
            f"Refused: the content is {len(data)} bytes, more than the {limit}-byte limit for one write."
        )
    existed = real.exists()
    _make_parents(workspace, real)
    atomic_write(real, data)
    verb = "Replaced" if existed else "Created"
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    return f"{verb} {workspace.display(real)} ({len(data)} bytes, {lines} lines)."


def _make_parents(workspace: Workspace, real: Path) -> None:
    parent = real.parent
    if parent.is_dir():
        return
    missing = []
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        folder.mkdir()
        if not workspace.contains(Path(folder.resolve())):
            raise ToolError(f"Refused: creating {folder.name} would leave the workspace.")


@tool(sequential=True, subjects={"path": PATH})
def edit_file(
    path: str,
    old_text: str,
    new_text: str,
    ctx: ToolContext,
    replace_all: bool = False,
) -> str:
    """Replace an exact piece of text in a workspace file.

    Use it for targeted changes to existing files: read the file first, then copy the
    text to change exactly, including indentation, with enough surrounding lines that it
    occurs only once. If it does not match exactly once the file is left unchanged and
    the error shows the closest passages or every match. Set replace_all to change every
    occurrence (e.g. a rename). To create a file use write_file.

    Example: {"path": "app.py", "old_text": "    return a - b", "new_text": "    return a + b"}

    Output: `Edited app.py: 1 replacement at line 12.`

    Args:
        path: File path relative to the workspace root.
        old_text: The exact text to find (whitespace matters).
        new_text: The text to put in its place.
        replace_all: Replace every occurrence instead of requiring exactly one.
    """
    workspace = Workspace.from_context(ctx)
    real = workspace.resolve(path, kind="file")
    if not old_text:
        raise ToolError("old_text is empty. To create or overwrite a whole file, use write_file.")
    if old_text == new_text:
        raise ToolError("old_text and new_text are identical; nothing would change.")
    limit = get_int(ctx.settings, "edit_file", "max_write_bytes", DEFAULT_MAX_WRITE_BYTES)
    data = read_bytes(real, limit + 1)
    if len(data) > limit:
        raise ToolError(
            f"{workspace.display(real)} is larger than {limit} bytes; edit_file does not change files that big."
        )
    if looks_binary(data):
        raise ToolError(
            f"{workspace.display(real)} is {describe_binary(data)}, not text; it cannot be edited."
        )
    text, used = decode(data)
    old, new = old_text, new_text
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    shown = workspace.display(real)
    if count == 0:
        raise ToolError(_no_match_message(shown, text, old_text))
    if count > 1 and not replace_all:
        lines = _match_lines(text, old)
        raise ToolError(
            f"old_text occurs {count} times in {shown} (at lines {', '.join(map(str, lines))}); "
            "the file is unchanged. Include more surrounding lines so it matches once, or set "
            "replace_all to change every occurrence."
        )
    first_line = text[: text.index(old)].count("\n") + 1
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    try:
        encoded = updated.encode(used)
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"new_text contains {exc.object[exc.start : exc.end]!r}, which the file's encoding ({used}) "
            "cannot represent; the file is unchanged."
        ) from None
    atomic_write(real, encoded)
    plural = "replacement" if count == 1 else "replacements"
    return f"Edited {shown}: {count if replace_all else 1} {plural} starting at line {first_line}."


def _match_lines(text: str, needle: str) -> list[int]:
    lines = []
    start = 0
    while (index := text.find(needle, start)) != -1:
        lines.append(text.count("\n", 0, index) + 1)
        start = index + max(len(needle), 1)
    return lines


def _no_match_message(shown: str, text: str, old_text: str) -> str:
    """Why nothing matched, with the closest passages of the file for the model to copy."""
    lines = text.splitlines()
    wanted = old_text.splitlines() or [old_text]
    width = len(wanted)
    target = "\n".join(wanted)
    scored: list[tuple[float, int]] = []
    for start in range(max(len(lines) - width + 1, 1)):
        window = "\n".join(lines[start : start + width])
        matcher = difflib.SequenceMatcher(None, window, target, autojunk=False)
        if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
            continue
        scored.append((matcher.ratio(), start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    message = [f"old_text was not found in {shown}; the file is unchanged."]
    if " ".join(old_text.split()) in " ".join(text.split()):
        message.append(
            "It matches if whitespace is ignored: check indentation, tabs and line breaks."
        )
    near = [item for item in scored if item[0] >= 0.6][:3]
    if near:
        message.append("Closest passages (line number, then text):")
        for ratio, start in near:
            block = "\n".join(
                f"{start + 1 + i}\t{line}" for i, line in enumerate(lines[start : start + width])
            )
            message.append(f"--- {ratio:.0%} similar, line {start + 1}:\n{block}")
    message.append("Read the file again and copy the text exactly.")
    return "\n".join(message)
