"""``JsonlSession``: a conversation in a JSON Lines file that survives crashes.

The file format (version 1)::

    {"tether_session": 1, "id": "3f2a...", "created_at": 1735689600.0}
    {"role": "user", "content": [{"type": "text", "text": "Hi"}], "meta": {...}}
    {"role": "assistant", "content": [...], "meta": {...}}

The first line is the header: ``tether_session`` is the format version, so later
versions of tether can migrate older files; ``id`` is the session id (a provider's prompt
cache key). Every further line is one :class:`~tether.messages.Message` exactly as
:meth:`Message.to_json` writes it.

Durability and atomicity:

- :meth:`JsonlSession.append` writes one complete line with a single ``write`` call and,
  with ``durable=True`` (the default), ``fsync``\\ s it before returning: a message whose
  ``append`` returned survives a process crash and a power loss. ``durable=False`` skips
  the ``fsync``: the line still survives the process being killed (it is in the operating
  system's cache) but the last appends may be lost if the machine itself goes down.
- Everything that rewrites the file (:meth:`~JsonlSession.replace`, compaction, repair)
  writes a temporary file next to it, ``fsync``\\ s it, renames it over the original and
  ``fsync``\\ s the directory, so a reader sees the old or the new history, never a mix.
- A writer holds an advisory lock on ``<file>.lock`` of the file's real path (symlinks
  resolved, so a link to a session is the same session); a second writer (another process,
  or another ``JsonlSession`` in the same one) gets :class:`~tether.errors.SessionLockedError`.
  A session file with other hard links is refused (:class:`~tether.errors.SessionError`):
  unlike a symlink, another hard-linked name has no single real path, so its writer would
  take another lock and the two would interleave.
  Temporary files left by a rewrite that was interrupted are removed when a writer opens.
- A write that fails (full disk, I/O error, read-only file system) raises
  :class:`~tether.errors.SessionError` saying what to do; the file keeps every message
  whose ``append`` returned, and the session can be used again once the cause is fixed.
- ``append_async`` and ``replace_async`` do the same work on a disk thread, so an event
  loop never waits on the disk; the runner uses them.

Loading never fails on damage a crash can cause (a torn last line, bytes that are not
UTF-8, a byte-order mark, NUL padding, an empty file): damaged lines are dropped, the
history goes through :func:`~tether.sessions.repair.repair_messages`, and what changed is
in :attr:`JsonlSession.repair_report` and logged on the ``tether.sessions`` logger. A
writer then stores the repaired history through the atomic rewrite. A torn last line is
the normal trace of a crash and is dropped silently; damage anywhere else is never just
deleted: the damaged original is first kept beside the file as
``<file>.corrupt-<UTC time>`` and the report says so.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from ..errors import SessionError, SessionLockedError
from ..fileio import (
    atomic_write_bytes,
    describe_os_error,
    off_loop,
    write_all,
)
from ..messages import Message, new_id
from ..scrub import scrub
from .repair import RepairReport, repair_messages

__all__ = ["FORMAT_VERSION", "JsonlSession", "LoadedSession", "load_session_file"]

FORMAT_VERSION = 1
"""The version written in the header of new session files."""

_BOM = b"\xef\xbb\xbf"
_STRIP = b" \t\r\x00"
_ROLE_START = b'{"role":'
_BATCH = 4096  # lines validated per call: few calls, and each batch's parse stays in cache
_log = logging.getLogger("tether.sessions")
# Repairs that drop or change stored content: the damaged original is kept before them.
_LOSSY = frozenset(
    {
        "unparseable_line",
        "invalid_utf8",
        "orphan_result",
        "duplicate_result",
        "renamed_message_id",
        "renamed_call_id",
    }
)
_messages_adapter: pydantic.TypeAdapter[list[Message]] | None = None


@dataclass(slots=True)
class LoadedSession:
    """What :func:`load_session_file` read: the repaired history and how it got there.

    ``clean`` is true when the file can be appended to as it is: it has a current header,
    ends with a newline and needed no repair. ``damaged`` is true when the repair dropped
    or changed stored content other than a torn last line (what a crash leaves).
    """

    id: str
    created_at: float
    messages: list[Message]
    report: RepairReport
    version: int
    clean: bool
    damaged: bool = False


def load_session_file(path: str | os.PathLike[str]) -> LoadedSession:
    """Read and repair a session file without changing it (and without taking the lock).

    A missing or empty file is an empty session. Raises :class:`SessionError` only for
    what a crash cannot cause: a file written by a newer format version, or one that
    cannot be read at all (permissions).
    """
    file = Path(path)
    return _parse(_read(file), file)


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except FileNotFoundError:
        return b""
    except IsADirectoryError as exc:
        raise SessionError(
            f"Cannot read session file {file}: it is a directory. Give the path of a file."
        ) from exc
    except OSError as exc:
        raise SessionError(f"Cannot read session file {file}: {describe_os_error(exc)}.") from exc


class JsonlSession:
    """A session stored in a JSON Lines file; see the module docstring for guarantees.

    :param path: the file; created (with its directory) if missing.
    :param durable: ``fsync`` every append before it returns (default). ``False`` trades
        power-loss safety for speed; a killed process still loses nothing.
    :param read_only: load without taking the lock and without writing the repair back;
        ``append`` and ``replace`` then raise :class:`SessionError`.
    :raises SessionLockedError: another writer has the session open.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durable: bool = True,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.durable = durable
        self.read_only = read_only
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._closed = False
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SessionError(
                    f"Cannot create the directory of session {self.path}: {describe_os_error(exc)}."
                ) from exc
        self._real = Path(os.path.realpath(self.path))
        try:
            if not read_only:
                _refuse_hard_links(self._real)
                self._lock_fd = _acquire_lock(self._real)
                _remove_leftover_temporaries(self._real)
            data = _read(self._real)
            loaded = _parse(data, self.path)
            self.id: str = loaded.id
            self.created_at = loaded.created_at
            self._messages: list[Message] = loaded.messages
            self.repair_report: RepairReport = loaded.report
            if not read_only and loaded.damaged:
                kept = _keep_damaged_original(self._real, data)
                loaded.report.add(
                    "kept_original",
                    f"the damaged file was kept unchanged as {kept.name} before the repaired "
                    "history was written",
                )
            if loaded.report:
                _log.warning(
                    "Session %s was repaired on load: %s", self.path, loaded.report.summary()
                )
            if not read_only:
                if not loaded.clean:
                    self._rewrite(self._messages)
                self._open_for_append()
        except BaseException:
            self.close()
            raise

    # -- the Session protocol -------------------------------------------------------------
    @property
    def messages(self) -> Sequence[Message]:
        return self._messages

    def append(self, message: Message) -> None:
        """Write ``message`` as one line; with ``durable`` it is on disk when this returns.

        :raises SessionError: the write failed; nothing of ``message`` stays in the file.
        """
        self._append_line(self._line(message), message)

    def _line(self, message: Message) -> bytes:
        return scrub(message.to_json()).encode("utf-8") + b"\n"

    def _append_line(self, line: bytes, message: Message) -> None:
        fd = self._writable()
        try:
            size = os.fstat(fd).st_size
            write_all(fd, line)
            if self.durable:
                os.fsync(fd)
        except OSError as exc:
            # Leave no torn line behind for the next append to run into.
            with contextlib.suppress(OSError, UnboundLocalError):
                os.ftruncate(fd, size)
            raise SessionError(
                f"Could not append to session {self.path}: {describe_os_error(exc)}. "
                "The message was not saved."
            ) from exc
        self._messages.append(message)

    def replace(self, messages: Sequence[Message]) -> None:
        """Swap the whole history atomically (temporary file, fsync, rename, fsync dir).

        :raises SessionError: the rewrite failed; the file and :attr:`messages` then hold
            the old history (or the new one, if only the final directory fsync failed).
        """
        self._writable()
        self._rewrite(list(messages))

    async def append_async(self, message: Message) -> None:
        """:meth:`append` with the file work on a disk thread: the event loop does not wait
        on the disk (the line is encoded here, so the thread holds no lock Python needs)."""
        await off_loop(self._append_line, self._line(message), message)

    async def replace_async(self, messages: Sequence[Message]) -> None:
        """:meth:`replace` on a disk thread: the event loop does not wait on the disk."""
        await off_loop(self.replace, list(messages))

    def clear(self) -> None:
        """Forget the history, keeping the session id."""
        self.replace([])

    def close(self) -> None:
        """Release the file and the lock. Safe to call twice."""
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None

    async def aclose(self) -> None:
        """:meth:`close` on a disk thread: closing a file just written can wait on the disk
        (:func:`~tether.sessions.close_session` uses this)."""
        await off_loop(self.close)

    def __enter__(self) -> JsonlSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<JsonlSession {self.path} ({len(self._messages)} messages)>"

    # -- writing ----------------------------------------------------------------------------
    def _writable(self) -> int:
        if self.read_only:
            raise SessionError(
                f"Session {self.path} was opened read-only; open it without read_only=True to write."
            )
        if self._closed:
            raise SessionError(f"Session {self.path} is closed.")
        if self._fd is None:  # a failed rewrite could not reopen it: try again
            self._open_for_append()
        assert self._fd is not None
        return self._fd

    def _open_for_append(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        try:
            self._fd = os.open(self._real, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0))
        except OSError as exc:
            raise SessionError(
                f"Cannot open session {self.path} for writing: {describe_os_error(exc)}. "
                "Open it with read_only=True to only read it."
            ) from exc

    def _rewrite(self, messages: list[Message]) -> None:
        """Store ``messages`` as the whole file and make them the history, atomically."""
        header = {"tether_session": FORMAT_VERSION, "id": self.id, "created_at": self.created_at}
        chunks = [json.dumps(header).encode("utf-8"), b"\n"]
        for message in messages:
            chunks.append(scrub(message.to_json()).encode("utf-8"))
            chunks.append(b"\n")

        def renamed() -> None:
            self._messages = messages
            if self._fd is not None:  # it points at the replaced file; reopened when needed
                os.close(self._fd)
                self._fd = None

        try:
            atomic_write_bytes(self._real, b"".join(chunks), renamed=renamed)
        except OSError as exc:
            raise SessionError(
                f"Could not rewrite session {self.path}: {describe_os_error(exc)}. "
                + (
                    "The new history is in place but may not survive a power loss."
                    if self._messages is messages
                    else "The file still holds the previous history."
                )
            ) from exc


def _remove_leftover_temporaries(real: Path) -> None:
    """Delete temporary files of rewrites that were interrupted (called under the lock,
    so no rewrite of this session is under way)."""
    with contextlib.suppress(OSError):
        for leftover in real.parent.glob(f".{glob.escape(real.name)}.*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()
                _log.info("Removed %s, left by an interrupted rewrite", leftover)


def _keep_damaged_original(real: Path, data: bytes) -> Path:
    """Write ``data`` (the damaged file as read) to ``<file>.corrupt-<UTC time>``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    copy = real.with_name(f"{real.name}.corrupt-{stamp}")
    number = 1
    while copy.exists():
        number += 1
        copy = real.with_name(f"{real.name}.corrupt-{stamp}-{number}")
    try:
        atomic_write_bytes(copy, data)
    except OSError as exc:
        raise SessionError(
            f"Session {real} is damaged and a copy of it could not be kept before repairing "
            f"it ({describe_os_error(exc)}). Nothing was changed; fix the cause, or open it "
            "with read_only=True to read the repaired history without writing."
        ) from exc
    return copy


# -- locking --------------------------------------------------------------------------------
def _refuse_hard_links(path: Path) -> None:
    """Refuse to write a session file that has other hard links (see the module docstring)."""
    try:
        links = path.stat().st_nlink
    except OSError:
        return  # missing (created later) or unreadable (reported when it is read)
    if links > 1:
        raise SessionError(
            f"Session file {path} has {links - 1} other hard link(s); refusing to write it, "
            "since a writer under another name would not see this one's lock. Remove the "
            "other names (or copy the file to a name of its own), or open it with "
            "read_only=True to only read it."
        )


def _acquire_lock(path: Path) -> int:
    """Take the writer lock of ``path`` (an advisory lock on ``<path>.lock``, a file that
    is never renamed, so the lock survives atomic rewrites of the session file)."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise SessionError(
            f"Cannot open session {path} for writing: its lock file {lock_path.name} cannot be "
            f"created ({describe_os_error(exc)}). Make the directory writable, or open the "
            "session with read_only=True to only read it."
        ) from exc
    try:
        _lock(fd)
    except OSError as exc:
        holder = _read_holder(fd)
        os.close(fd)
        who = f" (process {holder})" if holder else ""
        raise SessionLockedError(
            f"Session {path} is already open for writing{who}. Close the other writer, or open "
            "this session with read_only=True to look at it."
        ) from exc
    try:  # who holds it, for the error message of the next writer
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
    except OSError:
        pass
    return fd


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return ""


# -- parsing --------------------------------------------------------------------------------
def _parse(data: bytes, file: Path) -> LoadedSession:
    report = RepairReport()
    clean = True
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
        report.add("bom", "byte-order mark at the start of the file removed", line=1)
    if data and not data.endswith(b"\n"):
        clean = False
    lines = data.split(b"\n")
    header: dict[str, Any] | None = None
    start = 0
    first = lines[0].strip(_STRIP) if lines else b""
    if first.startswith(b'{"tether_session"'):
        try:
            parsed = json.loads(first)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("tether_session"), int):
            header = parsed
            start = 1
    version = FORMAT_VERSION
    if header is not None:
        version = header["tether_session"]
        if version > FORMAT_VERSION:
            raise SessionError(
                f"Session file {file} has format version {version}, but this tether reads versions "
                f"up to {FORMAT_VERSION}. Upgrade tether to open it."
            )
    elif any(line.strip(_STRIP) for line in lines):
        report.add("missing_header", "the file had no format header; one was added", line=1)
    messages = _parse_messages(lines, start, report)
    repaired, repair = repair_messages(messages)
    report.extend(repair)
    session_id = header.get("id") if header is not None else None
    return LoadedSession(
        id=session_id if isinstance(session_id, str) and session_id else new_id(),
        created_at=_created_at(header),
        messages=repaired,
        report=report,
        version=version,
        clean=clean and header is not None and version == FORMAT_VERSION and not report,
        damaged=_is_damaged(report, lines, torn=not data.endswith(b"\n")),
    )


def _created_at(header: dict[str, Any] | None) -> float:
    created = header.get("created_at") if header is not None else None
    if isinstance(created, int | float) and not isinstance(created, bool):
        try:
            value = float(created)
        except OverflowError:
            return time.time()
        if value == value and abs(value) != float("inf"):
            return value
    return time.time()


def _is_damaged(report: RepairReport, lines: list[bytes], *, torn: bool) -> bool:
    """Whether the repair lost stored content, other than a torn last line."""
    last = 0
    if torn:
        for number in range(len(lines), 0, -1):
            if lines[number - 1].strip(_STRIP):
                last = number
                break
    for action in report.actions:
        if action.kind not in _LOSSY:
            continue
        if action.line is not None and action.line == last:
            continue
        return True
    return False


def _parse_messages(lines: list[bytes], start: int, report: RepairReport) -> list[Message]:
    global _messages_adapter
    if _messages_adapter is None:
        _messages_adapter = pydantic.TypeAdapter(list[Message])
    messages: list[Message] = []
    with _long_lived_allocations():
        for first in range(start, len(lines), _BATCH):
            batch = lines[first : first + _BATCH]
            body = [line for line in batch if line]
            if not body:
                continue
            # The common case, intact lines, is validated a batch per call.
            try:
                messages += _messages_adapter.validate_json(b"[" + b",".join(body) + b"]")
                continue
            except (pydantic.ValidationError, ValueError):
                pass
            for number, raw in enumerate(batch, start=first + 1):
                line = raw.strip(_STRIP)
                if line:
                    message = _parse_line(line, number, report)
                    if message is not None:
                        messages.append(message)
    return messages


@contextlib.contextmanager
def _long_lived_allocations() -> Iterator[None]:
    """Pause the cyclic garbage collector for a burst of long-lived, acyclic objects.

    Parsing a long session allocates millions of objects, none of them in cycles, all
    kept for the life of the session. With the collector running, they would trigger
    repeated collections while parsing and then one scan of all of them as the youngest
    generation. Instead the collector is paused, and the survivors are handed straight to
    the oldest generation (``gc.freeze`` then ``gc.unfreeze``, both O(1) list moves), where
    the next full collection considers them as it would have anyway. Skipped when the
    application froze objects itself, so its frozen set stays frozen.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if collecting:
            gc.enable()


def _parse_line(line: bytes, number: int, report: RepairReport) -> Message | None:
    try:
        return Message.model_validate_json(line)
    except (pydantic.ValidationError, ValueError):
        pass
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
        try:
            message = Message.model_validate_json(text)
        except (pydantic.ValidationError, ValueError):
            pass
        else:
            report.add(
                "invalid_utf8", "bytes that are not UTF-8 were replaced by U+FFFD", line=number
            )
            return message
    # A torn line followed by a complete one on the same line: keep the complete one.
    position = line.rfind(_ROLE_START)
    if position > 0:
        salvaged = _parse_line(line[position:], number, RepairReport())
        if salvaged is not None:
            report.add(
                "unparseable_line",
                f"a torn message before byte {position} was dropped",
                line=number,
            )
            return salvaged
    preview = line[:60].decode("utf-8", "replace")
    report.add(
        "unparseable_line",
        f"dropped {len(line)} bytes that are not a message: {preview!r}",
        line=number,
    )
    return None
