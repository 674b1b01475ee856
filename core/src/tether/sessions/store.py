"""``SessionStore``: named sessions kept as JSONL files in one directory.

By default the directory is ``<data dir>/sessions`` (see :func:`tether.config.data_dir`;
``TETHER_DATA_DIR`` moves it). Session ``NAME`` lives in ``NAME.jsonl`` there, with its
writer lock in ``NAME.jsonl.lock``.

A name is 1 to 128 characters: letters, digits, ``.``, ``_`` and ``-``, starting with a
letter or digit. So a name is always one file inside the store and never a path
(``../x``, ``a/b`` and ``.hidden`` are refused with :class:`~tether.errors.SessionError`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SessionError
from .jsonl import JsonlSession, _acquire_lock

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["SessionInfo", "SessionStore", "validate_session_name"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SUFFIX = ".jsonl"


def validate_session_name(name: str) -> str:
    """Return ``name`` if it is a valid session name, else raise :class:`SessionError`."""
    if not _NAME.fullmatch(name) or name.endswith(".lock"):
        raise SessionError(
            f"{name!r} is not a valid session name. Use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no slashes), e.g. 'refactor-2'."
        )
    return name


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One stored session, as :meth:`SessionStore.list` sees it without loading it.

    ``messages`` counts the file's message lines (before any repair).
    """

    name: str
    path: Path
    size: int
    modified: datetime
    messages: int


class SessionStore:
    """Named :class:`JsonlSession` files in one directory.

    :param root: the directory; defaults to ``data_dir(config) / "sessions"``.
    :param config: configuration whose ``data_dir`` is used when ``root`` is omitted.
    """

    def __init__(
        self, root: str | os.PathLike[str] | None = None, *, config: Config | None = None
    ) -> None:
        if root is None:
            from ..config import data_dir

            root = data_dir(config) / "sessions"
        self.root = Path(root)

    def path(self, name: str) -> Path:
        """The file of session ``name`` (which need not exist)."""
        return self.root / f"{validate_session_name(name)}{_SUFFIX}"

    def exists(self, name: str) -> bool:
        return self.path(name).is_file()

    def open(self, name: str, *, durable: bool = True, read_only: bool = False) -> JsonlSession:
        """Open session ``name`` for writing, creating it if missing.

        :raises SessionLockedError: another process has it open.
        :raises SessionError: the name is invalid (see the module docstring), or
            ``read_only`` was asked for a session that does not exist.
        """
        path = self.path(name)
        if read_only and not path.is_file():
            raise SessionError(
                f"No session named {name!r} in {self.root}. `tether sessions list` shows them."
            )
        return JsonlSession(path, durable=durable, read_only=read_only)

    def list(self) -> list[SessionInfo]:
        """Every session in the store, most recently changed first."""
        if not self.root.is_dir():
            return []
        infos = []
        for entry in self.root.iterdir():
            name = entry.name[: -len(_SUFFIX)]
            if not entry.name.endswith(_SUFFIX) or not _NAME.fullmatch(name) or not entry.is_file():
                continue
            stat = entry.stat()
            infos.append(
                SessionInfo(
                    name=name,
                    path=entry,
                    size=stat.st_size,
                    modified=datetime.fromtimestamp(stat.st_mtime, tz=UTC),
                    messages=_count_messages(entry),
                )
            )
        infos.sort(key=lambda info: (info.modified, info.name), reverse=True)
        return infos

    def remove(self, name: str) -> None:
        """Delete session ``name`` and its lock file.

        :raises SessionError: there is no such session.
        :raises SessionLockedError: a process has it open for writing.
        """
        path = self.path(name)
        if not path.is_file():
            raise SessionError(
                f"No session named {name!r} in {self.root}. `tether sessions list` shows them."
            )
        real = Path(os.path.realpath(path))
        lock_fd = _acquire_lock(real)  # refuse to delete under a live writer
        try:
            path.unlink()
        finally:
            os.close(lock_fd)
        real.with_name(real.name + ".lock").unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"<SessionStore {self.root}>"


def _count_messages(path: Path) -> int:
    count = 0
    with path.open("rb") as file:
        for line in file:
            stripped = line.strip()
            if stripped and not stripped.startswith(b'{"tether_session"'):
                count += 1
    return count
