"""The event loop never waits on the disk: during a run, every write, fsync and rename of
the session and of cross-session memory happens on another thread."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

import tether
import tether.fileio
import tether.sessions.jsonl
import tether_memory.store
from tether.config import Config
from tether.sessions import JsonlSession, close_session
from tether.testing import Reply, ScriptedProvider, call
from tether_memory import CrossSessionMemory


class RecordingOS:
    """``os`` as the storage modules see it, noting which thread does each disk call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _note(self, name: str) -> None:
        self.calls.append((name, threading.current_thread().name))

    def write(self, fd: int, data: Any) -> int:
        self._note("write")
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self._note("fsync")
        os.fsync(fd)

    def replace(self, source: Any, target: Any) -> None:
        self._note("rename")
        os.replace(source, target)


async def test_a_run_does_its_session_and_memory_disk_work_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = CrossSessionMemory(tmp_path / "memory", project=tmp_path)
    session = JsonlSession(tmp_path / "s.jsonl")
    recorder = RecordingOS()
    for module in (tether.fileio, tether.sessions.jsonl, tether_memory.store):
        monkeypatch.setattr(module, "os", recorder)
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("memory", action="add", target="user", text="Prefers tabs.")]),
            Reply(text="Noted."),
        ]
    )
    agent = tether.Agent(
        provider, tools=[memory.tool], memory=memory, session=session, config=Config(), cwd=tmp_path
    )
    try:
        result = await agent.run("Remember that I prefer tabs.")
        # What compaction does to the session: an atomic rewrite.
        await session.replace_async(list(session.messages)[-2:])
    finally:
        session.close()
    assert result.output == "Noted."
    loop_thread = threading.current_thread().name
    kinds = {name for name, _ in recorder.calls}
    assert {"write", "fsync", "rename"} <= kinds, recorder.calls
    on_loop = [call for call in recorder.calls if call[1] == loop_thread]
    assert on_loop == [], on_loop
    assert memory.store.file("user").entries() == ["Prefers tabs."]


class ClosingOS(RecordingOS):
    def close(self, fd: int) -> None:
        self._note("close")
        os.close(fd)


async def test_a_session_closed_through_close_session_closes_its_files_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = JsonlSession(tmp_path / "s.jsonl")
    await session.append_async(tether.Message.user("hi"))
    recorder = ClosingOS()
    monkeypatch.setattr(tether.sessions.jsonl, "os", recorder)
    await close_session(session)
    await close_session(session)  # twice is safe
    closes = [thread for name, thread in recorder.calls if name == "close"]
    assert len(closes) == 2 and threading.current_thread().name not in closes, recorder.calls
    with JsonlSession(tmp_path / "s.jsonl") as again:  # the lock was released
        assert [m.text for m in again.messages] == ["hi"]
