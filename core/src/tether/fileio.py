"""Durable file operations shared by sessions and memory: whole writes, atomic rewrites,
directory fsyncs, and error messages that say what to do about a full or read-only disk.

Every operation here goes through this module's ``os`` and raises ``OSError`` unchanged;
callers wrap it in their own typed error with :func:`describe_os_error`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from .messages import new_id

T = TypeVar("T")

__all__ = [
    "atomic_write_bytes",
    "describe_os_error",
    "fsync_directory",
    "off_loop",
    "temporary_name",
    "write_all",
]

_ADVICE = {
    errno.ENOSPC: "the disk is full; free some space and retry",
    errno.EDQUOT: "the disk quota is exhausted; free some space and retry",
    errno.EROFS: "the file system is read-only; use a writable location or remount it",
    errno.EACCES: "permission denied; make it writable for this user or use another location",
    errno.EPERM: "the operation is not permitted; make it writable or use another location",
    errno.EIO: "the disk reported an I/O error; check the disk and retry",
}


def describe_os_error(exc: OSError) -> str:
    """``exc`` in words with what to do, e.g. ``"No space left on device: the disk is full;
    free some space and retry"``."""
    text = exc.strerror or str(exc) or type(exc).__name__
    advice = _ADVICE.get(exc.errno) if exc.errno is not None else None
    return f"{text}: {advice}" if advice else text


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than it was given)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary_name(path: Path) -> Path:
    """A fresh temporary file name beside ``path``: ``.<name>.<pid>.<random>.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{new_id()[:8]}.tmp")


def atomic_write_bytes(
    path: Path, data: bytes, *, renamed: Callable[[], None] | None = None
) -> None:
    """Replace ``path`` by ``data``: a temporary file in the same directory, fsync, rename,
    fsync the directory. A failure before the rename leaves the old file and no temporary
    file; the ``OSError`` is raised. ``renamed`` is called right after the rename, before
    the directory fsync (which may still fail): from then on ``path`` holds ``data``.
    """
    tmp = temporary_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if renamed is not None:
        renamed()
    fsync_directory(path.parent)


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _disk_executor() -> ThreadPoolExecutor:
    """Threads for disk work only, so tools that hang in the default executor can never
    hold up a session write."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tether-disk")
        return _executor


async def off_loop(function: Callable[..., T], *args: object) -> T:
    """Run blocking disk work ``function(*args)`` on a disk thread and wait for it.

    A cancellation of the caller does not abandon the work half-way from the caller's
    point of view: it waits until ``function`` has finished (its effect is then complete
    or failed as a whole) and then raises ``CancelledError``.
    """
    future = asyncio.get_running_loop().run_in_executor(_disk_executor(), function, *args)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((future,))
        raise
