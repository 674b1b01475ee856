"""Plain-text memory files: the user profile and the facts of each project.

Layout under ``<data_dir>/memory``::

    user.md                              the user profile
    projects/<name>-<hash>.md            facts of one project directory

A file is a list of entries separated by blank lines, so people can read and edit it.
Each file has a hard character cap. Writes are read-modify-write under a lock file (safe
across processes) and land atomically: a temporary file in the same directory is written,
fsynced and renamed over the old one, so a crash leaves the old or the new version, never
a torn one. A disk that refuses (full, read-only, I/O error) gives
:class:`~tether.errors.CrossSessionMemoryError` and leaves the old version. Every write is checked by :func:`tether_memory.scanner.scan` first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.errors import CrossSessionMemoryError, MemoryWriteRejected
from tether.fileio import atomic_write_bytes, describe_os_error

__all__ = [
    "DEFAULT_PROJECT_CAP",
    "DEFAULT_USER_CAP",
    "MemoryFile",
    "MemoryStore",
    "Target",
    "WriteResult",
    "atomic_write",
]

Target = Literal["user", "project"]

DEFAULT_USER_CAP = 1500
DEFAULT_PROJECT_CAP = 2500
SEPARATOR = "\n\n"
_BLANK_LINES = re.compile(r"\n\s*\n")

#: ``change(entries) -> (new_entries, note)``, applied by :meth:`MemoryFile.update`.
Change = Callable[[list[str]], tuple[list[str], str]]


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: temp file in the same directory, fsync, rename.

    :raises CrossSessionMemoryError: the disk refused (full, read-only, I/O error); the old
        file is left as it was (unless only the final directory fsync failed: the message
        then says the change was saved) and no temporary file remains.
    """
    data = text.encode("utf-8")
    renamed: list[bool] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data, renamed=lambda: renamed.append(True))
    except OSError as exc:
        outcome = (
            "The change was saved but may not survive a power loss."
            if renamed
            else "The memory was not changed."
        )
        raise CrossSessionMemoryError(
            f"Could not save {path}: {describe_os_error(exc)}. {outcome}"
        ) from exc


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` for a read-modify-write, across processes."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
    except OSError as exc:
        raise CrossSessionMemoryError(
            f"Cannot lock {path} for writing: {describe_os_error(exc)}. The memory was not changed."
        ) from exc
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
            try:
                yield
            finally:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def split_entries(text: str) -> list[str]:
    """The entries of a memory file (blank-line separated), stripped, empty ones dropped."""
    return [part.strip() for part in _BLANK_LINES.split(text) if part.strip()]


def _clean_entry(text: str) -> str:
    """One entry: no blank lines inside (they would split it), trailing spaces trimmed."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return "\n".join(line for line in lines if line)


def _key(entry: str) -> str:
    from .scanner import normalize  # the scanner's patterns are compiled on the first write

    return normalize(entry).rstrip(" .!;")


def merge_duplicates(entries: list[str]) -> list[str]:
    """Entries with duplicates merged: an entry equal to (after case, width and spacing
    folding) or contained in another is dropped in favour of the longer one, which keeps
    the position of the first of them."""
    kept: list[str] = []
    for entry in entries:
        key = _key(entry)
        if not key:
            continue
        merged = False
        for index, existing in enumerate(kept):
            other = _key(existing)
            if key in other:
                merged = True
                break
            if other in key:
                kept[index] = entry
                merged = True
                break
        if not merged:
            kept.append(entry)
    # A replacement may now contain a later entry: repeat until stable.
    return kept if len(kept) == len(entries) else merge_duplicates(kept)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did, in words the model and the user can act on."""

    message: str
    entries: tuple[str, ...]
    chars: int
    cap: int
    changed: bool


class MemoryFile:
    """One capped memory file (the user profile, or one project's facts)."""

    def __init__(self, path: Path, cap: int, label: str) -> None:
        if cap < 1:
            raise ValueError(f"A memory cap must be at least 1 character, got {cap}.")
        self.path = path
        self.cap = cap
        self.label = label

    def __repr__(self) -> str:
        return f"<MemoryFile {self.label} {self.path} cap={self.cap}>"

    def read_text(self) -> str:
        """The file's text ("" if it does not exist yet)."""
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as exc:
            raise CrossSessionMemoryError(
                f"Cannot read the {self.label} at {self.path}: {exc}. Fix or delete the file."
            ) from exc

    def entries(self) -> list[str]:
        return split_entries(self.read_text())

    def chars(self) -> int:
        return len(render(self.entries()))

    # -- writing -------------------------------------------------------------------------
    def update(self, change: Change) -> WriteResult:
        """Apply ``change`` to the current entries under the lock, check, and save."""
        with _locked(self.path):
            before = self.entries()
            after, note = change(before)
            after = merge_duplicates([_clean_entry(e) for e in after if _clean_entry(e)])
            if after == before:
                return WriteResult(
                    note or "No change.", tuple(before), len(render(before)), self.cap, False
                )
            self._check_cap(before, after)
            atomic_write(self.path, render(after) + "\n" if after else "")
        chars = len(render(after))
        return WriteResult(
            f"{note} The {self.label} now uses {chars}/{self.cap} characters; it reaches the "
            "system prompt from the next session on.",
            tuple(after),
            chars,
            self.cap,
            True,
        )

    def replace_all(self, text: str) -> WriteResult:
        """Replace the whole file with ``text`` (as ``tether memory edit`` does), after
        scanning it and checking the cap."""
        _check(text)
        entries = [_clean_entry(e) for e in split_entries(text)]
        return self.update(lambda _: (entries, f"Saved the {self.label}."))

    def clear(self) -> None:
        """Delete every entry (the file is removed)."""
        with _locked(self.path), contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _check_cap(self, before: list[str], after: list[str]) -> None:
        size = len(render(after))
        if size <= self.cap:
            return
        raise MemoryWriteRejected(
            f"Not saved: the {self.label} would be {size} characters, over its cap of "
            f"{self.cap} ({len(render(before))} used now). Consolidate first: merge related "
            "entries into one shorter entry with `replace`, or `remove` entries that no "
            "longer matter, then retry with a shorter text."
        )


def render(entries: list[str]) -> str:
    return SEPARATOR.join(entries)


def project_key(project: Path) -> str:
    """The file name of a project's facts: its directory name and a hash of its path."""
    resolved = project.expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", resolved.name).strip("-.") or "root"
    return f"{name[:40]}-{digest}"


class MemoryStore:
    """The user profile and one project's facts, with add / replace / remove.

    :param root: the memory directory (``<data_dir>/memory``).
    :param project: the project directory whose facts are used; ``None`` for none.
    :param user_cap: hard cap of the user profile, in characters.
    :param project_cap: hard cap of the project facts, in characters.
    """

    def __init__(
        self,
        root: Path,
        project: Path | None,
        *,
        user_cap: int = DEFAULT_USER_CAP,
        project_cap: int = DEFAULT_PROJECT_CAP,
    ) -> None:
        self.root = root
        self.project = project.expanduser().resolve() if project is not None else None
        self.user = MemoryFile(root / "user.md", user_cap, "user profile")
        self.project_facts: MemoryFile | None = None
        if self.project is not None:
            path = root / "projects" / f"{project_key(self.project)}.md"
            self.project_facts = MemoryFile(path, project_cap, "project facts")

    def file(self, target: Target) -> MemoryFile:
        """The file behind ``target`` (``"user"`` or ``"project"``)."""
        if target == "user":
            return self.user
        if target == "project":
            if self.project_facts is None:
                raise MemoryWriteRejected(
                    "No project directory is set for this memory, so there are no project "
                    "facts. Use target 'user', or create the memory with a project directory."
                )
            return self.project_facts
        raise MemoryWriteRejected(f"Unknown memory target {target!r}: use 'user' or 'project'.")

    # -- operations -------------------------------------------------------------------------
    def add(self, target: Target, text: str) -> WriteResult:
        """Add an entry; one that repeats or is contained in an existing entry is merged."""
        entry = _clean_entry(text)
        if not entry:
            raise MemoryWriteRejected("Nothing to add: `text` is empty. Pass the fact to remember.")
        _check(entry)
        file = self.file(target)

        def change(entries: list[str]) -> tuple[list[str], str]:
            key = _key(entry)
            if any(key in _key(existing) for existing in entries):
                return entries, f"Already in the {file.label}; nothing added."
            merged = any(_key(existing) in key for existing in entries)
            note = (
                "Merged into the existing entry it extends."
                if merged
                else f"Added to the {file.label}."
            )
            return [*entries, entry], note

        return file.update(change)

    def replace(self, target: Target, old: str, new: str) -> WriteResult:
        """Replace the substring ``old`` (which must occur exactly once) with ``new``; an
        entry left empty is removed."""
        if not old:
            raise MemoryWriteRejected("`old` is empty: pass the exact text to replace.")
        if new:
            _check(new)
        file = self.file(target)

        def change(entries: list[str]) -> tuple[list[str], str]:
            index = _unique_entry(entries, old, file.label)
            updated = entries[index].replace(old, new)
            _check(updated)
            result = [*entries[:index], updated, *entries[index + 1 :]]
            return result, f"Replaced in the {file.label}."

        return file.update(change)

    def remove(self, target: Target, old: str) -> WriteResult:
        """Remove the entry that contains the substring ``old`` (in exactly one entry)."""
        if not old:
            raise MemoryWriteRejected("`old` is empty: pass text from the entry to remove.")
        file = self.file(target)

        def change(entries: list[str]) -> tuple[list[str], str]:
            index = _unique_entry(entries, old, file.label)
            return [*entries[:index], *entries[index + 1 :]], f"Removed from the {file.label}."

        return file.update(change)


def _check(text: str) -> None:
    from .scanner import scan

    verdict = scan(text)
    if not verdict.allowed:
        raise MemoryWriteRejected(f"Not saved: {verdict.reason}")


def _unique_entry(entries: list[str], old: str, label: str) -> int:
    hits = [i for i, entry in enumerate(entries) if old in entry]
    if not hits:
        raise MemoryWriteRejected(
            f"{old!r} does not occur in the {label}. Pass an exact substring of the entry "
            f"(the {label} has {len(entries)} entries; they are in the system prompt)."
        )
    if len(hits) > 1 or entries[hits[0]].count(old) > 1:
        raise MemoryWriteRejected(
            f"{old!r} occurs more than once in the {label}. Include more of the surrounding "
            "text so it matches exactly one place."
        )
    return hits[0]
