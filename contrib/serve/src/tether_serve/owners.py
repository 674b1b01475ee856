"""Which tenant owns which session, kept across restarts.

A server keeps its sessions' histories wherever its session factory says; without a
record of who owns them, a restarted server would know none of them. An
:class:`OwnerStore` holds that record: one entry per session (tenant, session id, agent,
creation time), written when the session is created, read when the server starts.

:class:`JsonlOwnerStore` keeps it in a JSON Lines file next to the sessions' JSONL
files (``[serve] sessions_dir``): one line per session, appended and ``fsync``-ed before
the session is used, so a killed server loses no ownership it has answered for; a line
per change of what a session waits for (calls to decide, a question to answer), the
last one counting.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from tether import ConfigError
from tether.sessions import AnySession, JsonlSession

__all__ = ["JsonlOwnerStore", "Owned", "OwnerStore", "jsonl_sessions_in"]

_PLAIN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Owned:
    """A session and the tenant that owns it."""

    tenant: str
    session: str
    agent: str
    created: float
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Calls the session's last run suspended on, waiting for a decision."""
    question: dict[str, Any] | None = None
    """What a tool of the session's last run asked a person, waiting for an answer."""


class OwnerStore(Protocol):
    """Where ownership of sessions is kept."""

    def load(self) -> list[Owned]:
        """Every session owned, oldest first."""
        ...

    def add(self, owned: Owned) -> None:
        """Record a new session; durable when this returns."""
        ...

    def waiting(
        self,
        tenant: str,
        session: str,
        pending: list[dict[str, Any]],
        question: dict[str, Any] | None,
    ) -> None:
        """Record what the session waits for now (nothing: ``[]`` and ``None``)."""
        ...


class JsonlOwnerStore:
    """Ownership in a JSON Lines file (created with its directory when missing)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def load(self) -> list[Owned]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        owned: dict[tuple[str, str], Owned] = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = (str(entry["tenant"]), str(entry["session"]))
                if "waiting" in entry:
                    if key in owned:
                        waiting = entry["waiting"]
                        owned[key] = replace(
                            owned[key],
                            pending=list(waiting["pending"]),
                            question=waiting["question"],
                        )
                    continue
                owned[key] = Owned(*key, str(entry["agent"]), float(entry["created"]))
            except (ValueError, KeyError, TypeError):
                if number == len(text.splitlines()) and not text.endswith("\n"):
                    continue  # a line cut short by a crash while it was written
                raise ConfigError(
                    f"Line {number} of the session owners file {self.path} is not an owner "
                    "entry. Fix or remove that line; it records which tenant owns a session."
                ) from None
        return list(owned.values())

    def add(self, owned: Owned) -> None:
        self._append(asdict(owned))

    def waiting(
        self,
        tenant: str,
        session: str,
        pending: list[dict[str, Any]],
        question: dict[str, Any] | None,
    ) -> None:
        waiting = {"pending": pending, "question": question}
        self._append({"tenant": tenant, "session": session, "waiting": waiting})

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)


def _directory_of(tenant: str) -> str:
    """A tenant's directory name: the name itself when plain, else a digest of it."""
    if _PLAIN.match(tenant) and tenant not in (".", ".."):
        return tenant
    import hashlib

    return "t-" + hashlib.sha256(tenant.encode()).hexdigest()[:32]


def jsonl_sessions_in(
    directory: str | os.PathLike[str],
) -> tuple[Callable[[str, str], AnySession], JsonlOwnerStore]:
    """Sessions kept in ``directory``: each a JSONL file ``TENANT/SESSION.jsonl``, and who
    owns them in ``owners.jsonl``. The session factory and the owner store to serve with."""
    root = Path(directory).expanduser()

    def factory(tenant: str, session_id: str) -> AnySession:
        return JsonlSession(root / _directory_of(tenant) / f"{session_id}.jsonl")

    return factory, JsonlOwnerStore(root / "owners.jsonl")
