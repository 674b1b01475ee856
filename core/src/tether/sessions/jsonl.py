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
- A writer holds an advisory lock on ``<file>.lock``; a second writer (another process,
  or another ``JsonlSession`` in the same one) gets :class:`~tether.errors.SessionLockedError`.

Loading never fails on damage a crash can cause (a torn last line, bytes that are not
UTF-8, a byte-order mark, NUL padding, an empty file): damaged lines are dropped, the
history goes through :func:`~tether.sessions.repair.repair_messages`, and what changed is
in :attr:`JsonlSession.repair_report` and logged on the ``tether.sessions`` logger. A
writer then stores the repaired history through the atomic rewrite.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from ..errors import SessionError, SessionLockedError
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
_messages_adapter: pydantic.TypeAdapter[list[Message]] | None = None


@dataclass(slots=True)
class LoadedSession:
    """What :func:`load_session_file` read: the repaired history and how it got there.

    ``clean`` is true when the file can be appended to as it is: it has a current header,
    ends with a newline and needed no repair.
    """

    id: str
    created_at: float
    messages: list[Message]
    report: RepairReport
    version: int
    clean: bool


def load_session_file(path: str | os.PathLike[str]) -> LoadedSession:
    """Read and repair a session file without changing it (and without taking the lock).

    A missing or empty file is an empty session. Raises :class:`SessionError` only for
    what a crash cannot cause: a file written by a newer format version, or one that
    cannot be read at all (permissions).
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise SessionError(f"Cannot read session file {file}: {exc.strerror or exc}.") from exc
    return _parse(data, file)


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
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = _acquire_lock(self.path)
        try:
            loaded = load_session_file(self.path)
            self.id: str = loaded.id
            self.created_at = loaded.created_at
            self._messages: list[Message] = loaded.messages
            self.repair_report: RepairReport = loaded.report
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
        """Write ``message`` as one line; with ``durable`` it is on disk when this returns."""
        fd = self._writable()
        line = scrub(message.to_json()).encode("utf-8") + b"\n"
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, line)
            if self.durable:
                os.fsync(fd)
        except OSError as exc:
            # Leave no torn line behind for the next append to run into.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise SessionError(
                f"Could not append to session {self.path}: {exc.strerror or exc}."
            ) from exc
        self._messages.append(message)

    def replace(self, messages: Sequence[Message]) -> None:
        """Swap the whole history atomically (temporary file, fsync, rename, fsync dir)."""
        self._writable()
        new = list(messages)
        self._rewrite(new)
        self._messages = new
        self._open_for_append()

    def clear(self) -> None:
        """Forget the history, keeping the session id."""
        self.replace([])

    def close(self) -> None:
        """Release the file and the lock. Safe to call twice."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None

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
        if self._fd is None:
            raise SessionError(f"Session {self.path} is closed.")
        return self._fd

    def _open_for_append(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0))

    def _rewrite(self, messages: Iterable[Message]) -> None:
        header = {"tether_session": FORMAT_VERSION, "id": self.id, "created_at": self.created_at}
        chunks = [json.dumps(header).encode("utf-8"), b"\n"]
        for message in messages:
            chunks.append(scrub(message.to_json()).encode("utf-8"))
            chunks.append(b"\n")
        atomic_write(self.path, b"".join(chunks))


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: temporary file in the same directory, fsync, rename,
    fsync the directory. A crash at any point leaves either the old or the new file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{new_id()[:8]}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise SessionError(f"Could not rewrite session {path}: {exc.strerror or exc}.") from exc
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    if os.name != "posix":  # directories cannot be opened for fsync on Windows
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# -- locking --------------------------------------------------------------------------------
def _acquire_lock(path: Path) -> int:
    """Take the writer lock of ``path`` (an advisory lock on ``<path>.lock``, a file that
    is never renamed, so the lock survives atomic rewrites of the session file)."""
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
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
        except ValueError:
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
    created = header.get("created_at") if header is not None else None
    return LoadedSession(
        id=session_id if isinstance(session_id, str) and session_id else new_id(),
        created_at=float(created) if isinstance(created, int | float) else time.time(),
        messages=repaired,
        report=report,
        version=version,
        clean=clean and header is not None and version == FORMAT_VERSION and not report,
    )


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
