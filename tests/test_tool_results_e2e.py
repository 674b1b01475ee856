"""A real file name with undecodable bytes, listed, globbed and grepped by the tools of
tether-tools, cannot crash a run or corrupt its session: the model gets an error result
showing the name escaped, the run completes, and the session file loads again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tether
from tether.config import Config
from tether.sessions import JsonlSession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

BAD_NAME = b"report-\xff\xfe.txt"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "ok.txt").write_text("needle in ok\n")
    try:
        with open(os.path.join(os.fsencode(root), BAD_NAME), "wb") as handle:
            handle.write(b"needle in bad\n")
    except OSError as exc:  # a file system that refuses non-UTF-8 names cannot show this
        pytest.skip(f"cannot create a non-UTF-8 file name here: {exc}")
    return root


async def test_undecodable_file_names_become_error_results(workspace: Path, tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(
                tool_calls=[
                    call("list_dir", path="."),
                    call("glob", pattern="*.txt"),
                    call("grep", pattern="needle"),
                ]
            ),
            Reply(text="Listed."),
        ]
    )
    path = tmp_path / "session.jsonl"
    with JsonlSession(path) as session:
        agent = tether.Agent(provider, config=Config(tools=["fs"]), cwd=workspace)
        result = await agent.run("What is here?", session=session)
        assert result.outcome is tether.Outcome.COMPLETED, result.error
        results = session.messages[2].tool_results
    assert len(results) == 3
    for answer in results:
        if answer.is_error:  # the name reached the result undecoded: shown escaped
            assert "not valid Unicode" in answer.text and "\\udcff\\udcfe" in answer.text
        assert "ok.txt" in answer.text
    assert any(r.is_error for r in results)
    with JsonlSession(path) as reloaded:
        assert not reloaded.repair_report
        assert_invariant(reloaded.messages)
        assert [r.text for r in reloaded.messages[2].tool_results] == [r.text for r in results]
