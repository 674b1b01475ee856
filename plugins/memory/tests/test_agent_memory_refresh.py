"""Agent(memory=...): the snapshot is stable within a session and renewed by compaction."""

from __future__ import annotations

from pathlib import Path

import tether
from tether.compaction import CompactionContext, CompactionResult
from tether.config import Config
from tether.messages import Message
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, call
from tether_memory import CrossSessionMemory


class CompactOnceAfterTools:
    name = "compact-once"

    def __init__(self) -> None:
        self.done = False

    async def compact(self, context: CompactionContext) -> CompactionResult | None:
        if self.done:
            return None
        self.done = True
        return CompactionResult([Message.user("[summary of earlier work]")], 100, 10)


async def test_memory_tool_is_offered_and_a_write_shows_up_only_after_compaction(
    tmp_path: Path,
) -> None:
    memory = CrossSessionMemory(tmp_path / "memory", project=None)
    provider = ScriptedProvider(
        [
            Reply(
                tool_calls=[
                    call("memory", action="add", target="user", text="Prefers tabs over spaces.")
                ]
            ),
            Reply(text="Noted."),
        ]
    )
    agent = tether.Agent(
        provider, system="Base.", memory=memory, config=Config(), compaction=CompactOnceAfterTools()
    )
    result = await agent.run("Remember: I prefer tabs.", session=InMemorySession())
    assert result.ok and "memory" in [t.name for t in agent.tools()]
    first, second = provider.requests
    assert "Prefers tabs" not in first.system and first.system.startswith("Base.")
    assert "Prefers tabs over spaces." in second.system  # renewed by the compaction


async def test_without_compaction_the_snapshot_stays_byte_identical_for_the_session(
    tmp_path: Path,
) -> None:
    memory = CrossSessionMemory(tmp_path / "memory", project=None)
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("memory", action="add", target="user", text="Works in UTC.")]),
            Reply(text="Noted."),
            Reply(text="Hello again."),
        ]
    )
    agent = tether.Agent(provider, memory=memory, config=Config(), compaction="none")
    session = InMemorySession()
    await agent.run("Remember I work in UTC.", session=session)
    await agent.run("hi", session=session)
    assert len({r.system for r in provider.requests}) == 1
    assert "Works in UTC." not in provider.requests[-1].system
    provider.queue(Reply(text="fresh"))
    await agent.run("new session", session=InMemorySession())  # the next session sees the write
    assert "Works in UTC." in provider.requests[-1].system


def test_memory_caps_come_from_the_configuration(tmp_path: Path) -> None:
    from tether.config import parse_config

    config = parse_config({"memory": {"user_cap": 40, "project_cap": 60}})
    memory = CrossSessionMemory(tmp_path / "memory", project=tmp_path, config=config)
    assert memory.store.project_facts is not None
    assert (memory.store.user.cap, memory.store.project_facts.cap) == (40, 60)
    explicit = CrossSessionMemory(tmp_path / "memory", project=None, user_cap=10, config=config)
    assert explicit.store.user.cap == 10
    assert CrossSessionMemory(tmp_path / "memory", project=None).store.user.cap == 1500
