"""Skills in a run: the index in a byte-stable system prompt, load_skill, and a skill
whose toolset becomes available mid-run while the cached prompt prefix survives."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import tether
from tether.compaction.prefix import prefix_stability
from tether.config import Config
from tether.messages import ToolCallBlock
from tether.provider import ModelRequest
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

NOTES: list[str] = []


@tether.tool
def note_add(text: str) -> str:
    """Add a note."""
    NOTES.append(text)
    return f"{len(NOTES)} notes"


@tether.tool
def note_list() -> str:
    """List the notes."""
    return "\n".join(NOTES)


@tether.tool
def clock() -> str:
    """The time."""
    return "12:00"


@tether.hookimpl
def register_tools(tools):  # type: ignore[no-untyped-def]
    tools.add(tether.Toolset("notes", [note_add, note_list]))


def write_skill(
    root: Path, name: str, description: str, extra: str = "", body: str = "Steps."
) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8"
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    NOTES.clear()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    write_skill(
        tmp_path / ".tether" / "skills",
        "note-taking",
        "Keep notes during long tasks.",
        "tools: [notes]\n",
        "Add a note per finding.",
    )
    write_skill(tmp_path / "user-config" / "tether" / "skills", "timekeeping", "Tell the time.")
    return tmp_path


def script(turns: int):  # type: ignore[no-untyped-def]
    def handler(request: ModelRequest) -> Reply:
        calls = sum(1 for m in request.messages if m.role == "assistant")
        if calls == 0:
            return Reply(tool_calls=[call("load_skill", name="note-taking")])
        if calls < turns:
            return Reply(
                tool_calls=[
                    ToolCallBlock(
                        id=f"n{calls}", name="note_add", arguments={"text": f"finding {calls}"}
                    )
                ]
            )
        return Reply(text="All noted.")

    return handler


async def test_a_skill_adds_its_toolset_mid_run_and_the_prefix_stays_stable(project: Path) -> None:
    provider = ScriptedProvider(handler=script(24))
    agent = tether.Agent(
        provider,
        tools=[clock],
        config=Config(),
        cwd=project,
        system="You help.",
        plugins=[SimpleNamespace(register_tools=register_tools)],
    )
    events = [e async for e in agent.stream("research and keep notes")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.ok and result.output == "All noted." and len(NOTES) == 23

    first, later = provider.requests[0], provider.requests[1:]
    assert [t.name for t in first.tools] == ["clock", "load_skill"]
    assert all(
        [t.name for t in r.tools] == ["clock", "load_skill", "note_add", "note_list"] for r in later
    )
    # the skill index sits in the system prompt, identical in every request
    assert "- note-taking: Keep notes during long tasks." in first.system
    assert "- timekeeping: Tell the time." in first.system
    assert {r.system for r in provider.requests} == {first.system}
    loaded = result.messages[2].tool_results[0].text
    assert "Add a note per finding." in loaded and "note_add, note_list" in loaded

    report = prefix_stability(provider.requests)
    assert report.ratio >= 0.95, report
    assert report.breaks == [1]  # only the request right after the toolset was added
    assert_invariant(result.messages)


async def test_without_the_skill_loaded_its_tools_are_unknown(project: Path) -> None:
    provider = ScriptedProvider([Reply(tool_calls=[call("note_add", text="x")]), Reply(text="ok")])
    agent = tether.Agent(
        provider,
        config=Config(),
        cwd=project,
        plugins=[SimpleNamespace(register_tools=register_tools)],
    )
    result = await agent.run("x")
    assert "There is no tool named `note_add`" in result.messages[2].tool_results[0].text


async def test_skills_can_be_turned_off_or_given_explicitly(project: Path, tmp_path: Path) -> None:
    provider = ScriptedProvider([Reply(text="ok")])
    await tether.Agent(provider, config=Config(), cwd=project, skills=False).run("x")
    assert "Skills" not in provider.requests[0].system
    assert [t.name for t in provider.requests[0].tools] == []
    extra = tmp_path / "extra"
    write_skill(extra, "release-notes", "Write release notes.")
    provider = ScriptedProvider([Reply(text="ok")])
    await tether.Agent(
        provider, config=Config(), cwd=project, skills=[extra / "release-notes"]
    ).run("x")
    assert "- release-notes: Write release notes." in provider.requests[0].system
