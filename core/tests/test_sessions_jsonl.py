"""JsonlSession, SessionStore and `tether sessions`: what a user relies on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tether.errors import SessionError, SessionLockedError
from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tether.sessions import JsonlSession, SessionStore, load_session_file


def test_history_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "chat.jsonl"
    with JsonlSession(path) as session:
        session_id = session.id
        session.append(Message.user("hello"))
        session.append(
            Message(
                role="assistant", content=[TextBlock(text="hi"), ToolCallBlock(id="c1", name="f")]
            )
        )
        session.append(Message.tool([ToolResultBlock(call_id="c1", content="ok")]))
    with JsonlSession(path) as again:
        assert again.id == session_id
        assert [m.role for m in again.messages] == ["user", "assistant", "tool"]
        assert again.messages[1].tool_calls[0].id == "c1"
        assert not again.repair_report
    header = json.loads(path.read_bytes().splitlines()[0])
    assert header["tether_session"] == 1 and header["id"] == session_id


def test_non_durable_appends_still_reach_the_file(tmp_path: Path) -> None:
    with JsonlSession(tmp_path / "s.jsonl", durable=False) as session:
        session.append(Message.user("quick"))
        assert load_session_file(session.path).messages[0].text == "quick"


def test_replace_swaps_the_history_and_appends_continue(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with JsonlSession(path) as session:
        for i in range(5):
            session.append(Message.user(f"m{i}"))
        session.replace([Message.user("summary")])
        session.append(Message.user("after"))
        assert [m.text for m in session.messages] == ["summary", "after"]
    assert [m.text for m in load_session_file(path).messages] == ["summary", "after"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "s.jsonl.lock"]


def test_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with JsonlSession(path):
        with pytest.raises(SessionLockedError, match="already open for writing"):
            JsonlSession(path)
        JsonlSession(path, read_only=True).close()  # readers are never blocked
    JsonlSession(path).close()  # released on close


def test_second_writer_in_another_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    code = (
        "import sys\nfrom tether.sessions import JsonlSession\nfrom tether.errors import SessionLockedError\n"
        "try:\n    JsonlSession(sys.argv[1])\nexcept SessionLockedError as e:\n    print('locked:', e)\n"
    )
    with JsonlSession(path):
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
        )
    assert out.stdout.startswith("locked:")
    assert "process" in out.stdout  # names the process holding it


def test_read_only_session_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    JsonlSession(path).close()
    with (
        JsonlSession(path, read_only=True) as session,
        pytest.raises(SessionError, match="read-only"),
    ):
        session.append(Message.user("no"))


def test_file_from_a_newer_version_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"tether_session": 99, "id": "x"}\n')
    with pytest.raises(SessionError, match=r"format version 99.*Upgrade tether"):
        JsonlSession(path)
    assert path.read_text() == '{"tether_session": 99, "id": "x"}\n'


# -- SessionStore -------------------------------------------------------------------------------
def test_store_opens_lists_and_removes_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with store.open("refactor") as session:
        session.append(Message.user("a"))
        session.append(Message.user("b"))
    store.open("other").close()
    infos = {info.name: info for info in store.list()}
    assert set(infos) == {"refactor", "other"}
    assert infos["refactor"].messages == 2 and infos["refactor"].path == tmp_path / "refactor.jsonl"
    with store.open("refactor") as resumed:
        assert [m.text for m in resumed.messages] == ["a", "b"]
    store.remove("refactor")
    assert [i.name for i in store.list()] == ["other"]
    with pytest.raises(SessionError, match="No session named 'refactor'"):
        store.remove("refactor")


def test_store_defaults_to_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path))
    assert SessionStore().root == tmp_path / "sessions"


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "", "x" * 200, "a\\b", "s.lock"])
def test_store_rejects_names_that_are_not_plain_file_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(SessionError, match="not a valid session name"):
        SessionStore(tmp_path).open(name)


def test_store_refuses_to_remove_a_session_in_use(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with store.open("busy"), pytest.raises(SessionLockedError):
        store.remove("busy")
    assert store.exists("busy")


# -- tether sessions ----------------------------------------------------------------------------
@pytest.fixture
def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionStore:
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path))
    return SessionStore(tmp_path / "sessions")


def run_cli(*args: str) -> tuple[int, str]:
    from tether_cli import cli

    result = CliRunner().invoke(cli, ["sessions", *args])
    return result.exit_code, result.output


def test_cli_list_show_rm(cli_store: SessionStore) -> None:
    assert "No sessions" in run_cli("list")[1]
    with cli_store.open("work") as session:
        session.append(Message.user("fix the parser"))
        session.append(
            Message(
                role="assistant",
                content=[ToolCallBlock(id="c1", name="read_file", arguments={"path": "p.py"})],
            )
        )
        session.append(Message.tool([ToolResultBlock(call_id="c1", content="def parse(): ...")]))
    code, out = run_cli("list")
    assert code == 0 and "work" in out and "3 messages" in out
    code, out = run_cli("show", "work")
    assert code == 0
    assert "fix the parser" in out and "read_file" in out and "def parse()" in out
    code, out = run_cli("show", "work", "--json")
    assert [json.loads(line)["role"] for line in out.splitlines()] == ["user", "assistant", "tool"]
    assert run_cli("rm", "work")[0] == 0
    code, out = run_cli("rm", "work")
    assert code == 1 and "No session named 'work'" in out


def test_cli_repair_dry_run_then_repair(cli_store: SessionStore) -> None:
    path = cli_store.path("broken")
    path.parent.mkdir(parents=True)
    call = Message(role="assistant", content=[ToolCallBlock(id="c1", name="f")])
    damaged = (
        b'{"tether_session": 1, "id": "b"}\n' + call.to_json().encode() + b"\n" + b'{"role": "us'
    )
    path.write_bytes(damaged)
    code, out = run_cli("repair", "broken", "--dry-run")
    assert code == 0
    assert "interrupted call" in out and "unparseable line" in out and "Nothing was written" in out
    assert path.read_bytes() == damaged
    code, out = run_cli("repair", "broken")
    assert code == 0 and "Repaired session broken" in out
    assert not load_session_file(path).report
    assert "nothing to repair" in run_cli("repair", "broken")[1]


def test_loading_leaves_the_garbage_collector_as_the_application_set_it(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "s.jsonl"
    with JsonlSession(path, durable=False) as session:
        session.replace([Message.user(f"message {n}") for n in range(50)])
    kept = [object() for _ in range(10)]
    gc.collect()
    gc.freeze()  # an application that froze its start-up objects
    frozen = gc.get_freeze_count()
    try:
        assert gc.isenabled()
        with JsonlSession(path, read_only=True) as loaded:
            assert len(loaded.messages) == 50
        assert gc.isenabled()
        assert gc.get_freeze_count() == frozen
        gc.disable()  # an application that runs without the collector
        with JsonlSession(path, read_only=True) as loaded:
            assert [m.text for m in loaded.messages][-1] == "message 49"
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
    assert kept
