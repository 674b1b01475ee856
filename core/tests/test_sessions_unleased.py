"""A session store written before writer leases still passes the store contract, keeps
what it cannot parse, and is told once what to implement."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Sequence

import pytest

from tether.sessions import close_session
from tether.sessions.versioned import SessionSummary, StoredRecord, VersionedStore, conflict
from tether.testing import SessionStoreContract


class OldProtocolIO:
    """The raw operations as a third-party store implemented them before leases."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, object]] = {}

    def _record(self, name: str) -> StoredRecord:
        data = self.records[name]
        return StoredRecord(
            str(data["id"]), float(data["created_at"]), int(data["version"]), list(data["lines"])
        )  # type: ignore[arg-type,call-overload]

    async def load(self, name: str) -> StoredRecord | None:
        return self._record(name) if name in self.records else None

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        self.records.setdefault(
            name, {"id": session_id, "created_at": created_at, "version": 0, "lines": []}
        )
        return self._record(name)

    def _checked(self, name: str, expected: int) -> dict[str, object]:
        data = self.records.get(name)
        if data is None or data["version"] != expected:
            raise conflict(name, expected, None if data is None else int(data["version"]))  # type: ignore[call-overload]
        return data

    async def append(self, name: str, expected: int, position: int, line: str) -> int:
        data = self._checked(name, expected)
        data["lines"] = [*data["lines"][:position], line]  # type: ignore[index]
        data["version"] = expected + 1
        return expected + 1

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int:
        data = self._checked(name, expected)
        data["lines"], data["version"] = list(lines), expected + 1
        return expected + 1

    async def summaries(self) -> list[SessionSummary]:
        return [SessionSummary(n, len(d["lines"])) for n, d in self.records.items()]  # type: ignore[arg-type]

    async def delete(self, name: str) -> bool:
        return self.records.pop(name, None) is not None

    async def aclose(self) -> None:
        return None


def _store(io: OldProtocolIO) -> VersionedStore:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return VersionedStore(io)


class TestAStoreWithoutLeases(SessionStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[], VersionedStore]:
        io = OldProtocolIO()
        return lambda: _store(io)

    async def store_raw_line(self, store: object, name: str, line: str) -> bool:
        io = store.io.inner  # type: ignore[attr-defined]
        record = await io.load(name)
        await io.append(name, record.version, len(record.lines), line)
        return True


def test_a_store_without_leases_is_told_once_what_to_implement() -> None:
    with pytest.warns(DeprecationWarning, match="claim, renew, release, quarantine"):
        VersionedStore(OldProtocolIO())


def test_unparseable_records_of_a_store_without_leases_are_kept_and_not_listed() -> None:
    io = OldProtocolIO()
    store = _store(io)

    async def scenario() -> None:
        await close_session(await store.open("notes"))
        record = await io.load("notes")
        assert record is not None
        await io.append("notes", record.version, 0, '{"role": "us')
        await close_session(await store.open("notes"))
        assert await store.quarantined("notes") == ['{"role": "us']
        assert [s.name for s in await store.list()] == ["notes"]
        await store.remove("notes")
        assert io.records == {}  # the quarantine goes with its session

    asyncio.run(scenario())
