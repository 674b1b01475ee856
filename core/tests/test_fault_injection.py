"""Fault injection in the manner of SQLite's I/O-error tests.

A scripted run (session appends, rewrites, reopening a damaged file, an agent run with a
tool call, memory writes) is first run cleanly while every ``open``, ``write``, ``fsync``
and ``rename`` of the storage code is counted. Then, for every operation kind, every N up
to its count and every errno of ENOSPC, EIO and EROFS, the script runs again with the
N-th operation failing once ("transient": the disk recovers) or from then on
("persistent": it stays full or read-only). After each run:

- the error reached the caller as the documented typed error, caused by the injected
  ``OSError`` and saying what to do;
- the file still loads, and holds exactly the acknowledged history: every message whose
  ``append`` returned, nothing whose ``append`` failed;
- the loaded history keeps the tool-call invariant;
- no temporary file is left behind, and damage is never dropped without a kept copy.

Faults are injected by swapping the ``os`` module seen by the storage modules for a
counting proxy, so the real code paths run. The proxy's ``fsync`` counts without syncing
(power loss is the crash suite's subject, not this one's), which keeps the whole grid of
a few hundred runs within seconds.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import tether.fileio
import tether.sessions.jsonl
import tether_memory.store
from tether.errors import CrossSessionMemoryError, SessionError
from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tether.sessions import JsonlSession, load_session_file
from tether.sessions.repair import INTERRUPTED_ON_LOAD
from tether.testing import Reply, ScriptedProvider, assert_invariant, call
from tether_memory import MemoryStore

OPERATIONS = ("open", "write", "fsync", "rename")
ERRNOS = (errno.ENOSPC, errno.EIO, errno.EROFS)
ADVICE = {
    errno.ENOSPC: "free some space",
    errno.EIO: "check the disk",
    errno.EROFS: "read-only",
}
MODULES = (tether.fileio, tether.sessions.jsonl, tether_memory.store)


@dataclass
class Fault:
    """Fail the ``nth`` call of ``operation`` with ``code`` (and every later one if
    ``persistent``); count every operation either way."""

    operation: str | None = None
    nth: int = 0
    code: int = errno.EIO
    persistent: bool = False
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPERATIONS, 0))
    injected: int = 0

    def tick(self, operation: str) -> None:
        self.counts[operation] += 1
        if operation != self.operation:
            return
        number = self.counts[operation]
        if number == self.nth or (self.persistent and number > self.nth):
            self.injected += 1
            raise OSError(self.code, os.strerror(self.code))


class FaultyOS:
    """``os`` as the storage modules see it, with the four operations counted and failed."""

    def __init__(self, fault: Fault) -> None:
        self._fault = fault

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        self._fault.tick("open")
        return os.open(path, flags, mode, **kwargs)

    def write(self, fd: int, data: Any) -> int:
        self._fault.tick("write")
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self._fault.tick("fsync")

    def replace(self, source: Any, target: Any) -> None:
        self._fault.tick("rename")
        os.replace(source, target)

    def rename(self, source: Any, target: Any) -> None:
        self._fault.tick("rename")
        os.rename(source, target)


@pytest.fixture
def inject(monkeypatch: pytest.MonkeyPatch) -> Callable[[Fault], None]:
    def install(fault: Fault) -> None:
        proxy = FaultyOS(fault)
        for module in MODULES:
            monkeypatch.setattr(module, "os", proxy)

    return install


def check_typed(error: Exception, expected: type[Exception], fault: Fault) -> None:
    """The error is the documented type, caused by the injected OSError, with advice."""
    assert isinstance(error, expected), repr(error)
    cause = error.__cause__
    assert isinstance(cause, OSError) and cause.errno == fault.code, repr(cause)
    assert ADVICE[fault.code] in str(error), str(error)


def no_temporaries(directory: Path) -> None:
    leftovers = [p.name for p in directory.rglob("*.tmp")]
    assert not leftovers, leftovers


def grid(counts: dict[str, int]) -> Iterator[Fault]:
    for operation in OPERATIONS:
        for nth in range(1, counts[operation] + 1):
            for code in ERRNOS:
                for persistent in (False, True):
                    yield Fault(operation, nth, code, persistent)


# -- sessions: appends, rewrites, reopening --------------------------------------------------
def user(n: int) -> Message:
    return Message.user(f"question {n}")


def said(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


def asks(n: int) -> Message:
    return Message(
        role="assistant",
        content=[TextBlock(text="looking"), ToolCallBlock(id=f"c{n}", name="read", arguments={})],
    )


def answers(n: int) -> Message:
    return Message.tool([ToolResultBlock(call_id=f"c{n}", content=f"result {n}")])


SCRIPT: list[tuple[str, Any]] = [
    ("append", user(1)),
    ("append", asks(1)),
    ("append", answers(1)),
    ("append", said("done 1")),
    ("replace", [Message.user("summary of turn 1"), said("ok")]),
    ("append", user(2)),
    ("reopen", None),
    ("append", asks(2)),
    ("append", answers(2)),
    ("replace", [Message.user("summary of turns 1-2")]),
    ("append", said("done 2")),
]


def synthesized(message: Message) -> bool:
    return message.role == "tool" and all(
        r.text == INTERRUPTED_ON_LOAD for r in message.tool_results
    )


def ids(messages: Any) -> list[str]:
    return [m.id for m in messages]


AFTER = Message.user("written once the disk is back")


def run_session_script(path: Path, fault: Fault) -> list[SessionError]:
    """Run SCRIPT against ``path`` as the runner would: stop at the first error. Then, as
    an application would, write one more message (on the same session if it is open,
    else on a reopened one): it must succeed once a transient fault is gone. Asserts
    after every step that disk and memory hold exactly the acknowledged history; returns
    the errors."""
    acked: list[Message] = []
    errors: list[SessionError] = []
    session: JsonlSession | None = None

    def on_disk() -> list[str]:
        """The ids stored, without the answers repair adds for calls left unanswered."""
        return ids(m for m in load_session_file(path).messages if not synthesized(m))

    for kind, payload in SCRIPT:
        try:
            if session is None:
                session = JsonlSession(path)
                assert ids(session.messages) == ids(acked)
            if kind == "append":
                session.append(payload)
                acked.append(payload)
            elif kind == "replace":
                session.replace(payload)
                acked = list(payload)
            else:
                session.close()
                session = None
        except SessionError as exc:
            errors.append(exc)
            if kind == "replace" and session is not None and ids(session.messages) == ids(payload):
                acked = list(payload)  # renamed into place; only the directory fsync failed
            assert on_disk() == ids(acked), (kind, fault)
            break
        assert on_disk() == ids(acked), (kind, fault)
        if session is not None:
            assert ids(session.messages) == ids(acked)
    if errors:
        try:
            if session is None:
                session = JsonlSession(path)
            session.append(AFTER)
            acked.append(AFTER)
        except SessionError as exc:
            assert fault.persistent, f"the session did not recover from a transient fault: {exc}"
            errors.append(exc)
        assert on_disk() == ids(acked), fault
    if session is not None:
        session.close()
    return errors


def test_session_script_counts_every_kind_of_operation(
    tmp_path: Path, inject: Callable[[Fault], None]
) -> None:
    fault = Fault()
    inject(fault)
    assert run_session_script(tmp_path / "s.jsonl", fault) == []
    assert all(fault.counts[op] >= 3 for op in OPERATIONS), fault.counts


def clean_counts(
    tmp_path: Path, inject: Callable[[Fault], None], script: Callable[..., Any]
) -> dict[str, int]:
    fault = Fault()
    inject(fault)
    script(tmp_path / "clean", fault)
    return dict(fault.counts)


def test_every_failed_operation_of_a_session_loses_no_acknowledged_message(
    tmp_path: Path, inject: Callable[[Fault], None]
) -> None:
    def script(directory: Path, fault: Fault) -> list[SessionError]:
        directory.mkdir()
        return run_session_script(directory / "s.jsonl", fault)

    counts = clean_counts(tmp_path, inject, script)
    runs = reported = 0
    for number, fault in enumerate(grid(counts)):
        inject(fault)
        directory = tmp_path / f"run{number}"
        errors = script(directory, fault)
        assert fault.injected, fault
        # A fault may go unreported only where the work is best-effort (the lock holder's
        # pid): the script then completed, and every step matched the disk.
        reported += bool(errors)
        for error in errors:
            check_typed(error, SessionError, fault)
        loaded = load_session_file(directory / "s.jsonl")
        assert_invariant(loaded.messages)
        no_temporaries(directory)
        runs += 1
    assert runs == sum(counts.values()) * len(ERRNOS) * 2
    assert reported >= runs - 2 * len(ERRNOS) * 2


DAMAGED = (
    b'{"tether_session": 1, "id": "s1", "created_at": 1.0}\n'
    + Message.user("kept before").to_json().encode()
    + b"\n{this line is damaged}\n"
    + Message.user("kept after").to_json().encode()
    + b"\n"
)


def test_every_failed_operation_while_repairing_a_damaged_session_keeps_the_damage(
    tmp_path: Path, inject: Callable[[Fault], None]
) -> None:
    def script(directory: Path, fault: Fault) -> list[SessionError]:
        directory.mkdir()
        path = directory / "s.jsonl"
        path.write_bytes(DAMAGED)
        errors: list[SessionError] = []
        try:
            with JsonlSession(path) as session:
                session.append(Message.user("after the repair"))
        except SessionError as exc:
            errors.append(exc)
        return errors

    counts = clean_counts(tmp_path, inject, script)
    for number, fault in enumerate(grid(counts)):
        inject(fault)
        directory = tmp_path / f"run{number}"
        errors = script(directory, fault)
        for error in errors:
            check_typed(error, SessionError, fault)
        path = directory / "s.jsonl"
        if not errors:  # only best-effort work failed: the repair and the append went through
            assert load_session_file(path).messages[-1].text == "after the repair", fault
        copies = list(directory.glob("s.jsonl.corrupt-*"))
        # The damaged bytes survive: still in place, or in a complete kept copy.
        assert path.read_bytes() == DAMAGED or [c.read_bytes() for c in copies] == [DAMAGED], fault
        texts = [m.text for m in load_session_file(path).messages]
        assert texts[:2] == ["kept before", "kept after"]
        no_temporaries(directory)


# -- an agent run: the runner's appends under faults ------------------------------------------
async def test_every_failed_operation_of_an_agent_run_reaches_the_caller_typed(
    tmp_path: Path, inject: Callable[[Fault], None]
) -> None:
    import tether
    from tether.config import Config
    from tether.tools import tool

    @tool
    def read(path: str) -> str:
        """Read."""
        return f"contents of {path}"

    async def script(directory: Path, fault: Fault) -> tuple[list[str], Exception | None]:
        directory.mkdir()  # noqa: ASYNC240 - a test's temporary directory
        provider = ScriptedProvider(
            [Reply(tool_calls=[call("read", path="a.txt")]), Reply(text="The file says hi.")]
        )
        session = None
        try:
            session = JsonlSession(directory / "s.jsonl")
            agent = tether.Agent(
                provider, tools=[read], session=session, config=Config(), cwd=directory
            )
            await agent.run("What does a.txt say?")
        except SessionError as exc:
            return (ids(session.messages) if session else []), exc
        finally:
            if session is not None:
                session.close()
        return ids(session.messages), None

    fault = Fault()
    inject(fault)
    await script(tmp_path / "clean", fault)
    counts = dict(fault.counts)
    for number, fault in enumerate(grid(counts)):
        inject(fault)
        directory = tmp_path / f"run{number}"
        acked, error = await script(directory, fault)
        assert fault.injected, fault
        if error is not None:
            check_typed(error, SessionError, fault)
        else:  # only best-effort work failed (the lock holder's pid): the run completed
            assert len(acked) == 4, fault
        loaded = load_session_file(directory / "s.jsonl").messages
        assert_invariant(loaded)
        # Every acknowledged message is on disk, in order; repair may only add answers
        # for a call whose result could not be written.
        assert ids(loaded)[: len(acked)] == acked, fault
        assert all(m.role == "tool" for m in loaded[len(acked) :]), fault
        no_temporaries(directory)


# -- memory writes ---------------------------------------------------------------------------
MEMORY_SCRIPT: list[tuple[str, tuple[str, ...]]] = [
    ("add", ("user", "Prefers short answers.")),
    ("add", ("project", "Tests run with `nox -s tests`.")),
    ("add", ("user", "Works in UTC.")),
    ("replace", ("user", "short answers", "short answers with code")),
    ("remove", ("project", "nox")),
    ("add", ("project", "Releases are tagged vX.Y.Z.")),
]


def run_memory_script(root: Path, fault: Fault) -> list[CrossSessionMemoryError]:
    store = MemoryStore(root, root / "project")
    acked = {"user": [], "project": []}  # type: dict[str, list[str]]
    errors: list[CrossSessionMemoryError] = []
    steps = list(MEMORY_SCRIPT)
    while steps:
        action, args = steps.pop(0)
        target = args[0]
        try:
            result = getattr(store, action)(*args)
            acked[target] = list(result.entries)
        except CrossSessionMemoryError as exc:
            assert not errors or fault.persistent, f"no recovery from a transient fault: {exc}"
            errors.append(exc)
            if "was saved" in str(exc):  # renamed into place; only the directory fsync failed
                acked[target] = store.file(target).entries()  # type: ignore[arg-type]
            # Stop the script; write once more, as a later session would.
            steps = [] if len(errors) > 1 else [("add", ("user", "Written once the disk is back."))]
        for name in ("user", "project"):
            assert store.file(name).entries() == acked[name], (action, fault)  # type: ignore[arg-type]
    return errors


def test_every_failed_operation_of_a_memory_write_keeps_the_last_saved_version(
    tmp_path: Path, inject: Callable[[Fault], None]
) -> None:
    counts = clean_counts(tmp_path, inject, run_memory_script)
    assert all(counts[op] >= 4 for op in OPERATIONS), counts
    for number, fault in enumerate(grid(counts)):
        inject(fault)
        root = tmp_path / f"run{number}"
        errors = run_memory_script(root, fault)
        assert errors, f"an injected fault went unreported: {fault}"
        for error in errors:
            check_typed(error, CrossSessionMemoryError, fault)
        no_temporaries(root)
