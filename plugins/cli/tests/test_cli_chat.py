"""``tether chat``: a named session that survives restarts, Ctrl-C that cancels one
response and keeps the history valid, Ctrl-D that exits. The model is
``cli_fake_model.py`` (next to this file) (loaded with ``-p``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tether.sessions import JsonlSession, load_session_file
from tether.testing import assert_invariant

TETHER = Path(sys.executable).with_name("tether")
FAKE = ["-p", "cli_fake_model"]


@pytest.fixture
def cli_config() -> str:
    return 'model = "fake/fake-small"\ntools = ["add", "wait_forever"]\n'


@pytest.fixture
def chat(invoke: Callable[..., Result]) -> Callable[..., Result]:
    """``chat(*args, input=...)``: ``tether -p cli_fake_model chat ARGS`` in-process."""

    def run(*args: str, input: str) -> Result:
        return invoke(*FAKE, "chat", *args, input=input)

    return run


def session_file(tmp_path: Path, name: str) -> Path:
    return tmp_path / "data" / "sessions" / f"{name}.jsonl"


def test_a_named_session_resumes_where_it_left_off(
    tmp_path: Path, chat: Callable[..., Result]
) -> None:
    first = chat("--session", "work", input="hello\nadd 1 2\n")
    assert first.exit_code == 0, first.stderr
    assert "You said: hello" in first.stdout and "Tool said: 3" in first.stdout
    assert 'New session "work"' in first.stderr

    second = chat("--session", "work", input="history\n")
    assert second.exit_code == 0, second.stderr
    assert 'Resumed session "work" (6 messages)' in second.stderr
    # user, assistant, user, assistant+call, tool result, assistant, and now the new prompt
    assert "I was sent 7 messages." in second.stdout
    stored = load_session_file(session_file(tmp_path, "work")).messages
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_sessions_with_different_names_are_separate(
    tmp_path: Path, chat: Callable[..., Result]
) -> None:
    chat("--session", "one", input="hello\n")
    other = chat("--session", "two", input="history\n")
    assert "I was sent 1 messages." in other.stdout
    assert session_file(tmp_path, "one").is_file() and session_file(tmp_path, "two").is_file()


def test_end_of_input_and_slash_exit_both_quit_cleanly(chat: Callable[..., Result]) -> None:
    assert chat(input="").exit_code == 0
    result = chat(input="/exit\nhello\n")
    assert result.exit_code == 0
    assert "You said" not in result.stdout


def test_an_invalid_session_name_is_a_clean_error(chat: Callable[..., Result]) -> None:
    result = chat("--session", "../escape", input="hi\n")
    assert result.exit_code == 1
    assert "is not a valid session name" in result.stderr


def test_a_session_open_elsewhere_is_refused_with_a_clear_message(
    tmp_path: Path, chat: Callable[..., Result]
) -> None:
    path = session_file(tmp_path, "busy")
    path.parent.mkdir(parents=True)
    with JsonlSession(path):
        result = chat("--session", "busy", input="hi\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert "is already open for writing" in result.stderr
    assert "`tether sessions show busy`" in result.stderr
    assert "read_only=True" not in result.stderr  # says CLI things to a CLI user
    assert "Traceback" not in result.output


def test_a_missing_key_stops_the_chat_before_the_first_prompt(
    monkeypatch: pytest.MonkeyPatch, cli_environment: Path, chat: Callable[..., Result]
) -> None:
    monkeypatch.delenv("FAKE_MODEL_API_KEY")
    result = chat(input="hello\n")
    assert result.exit_code == 1
    assert "Set FAKE_MODEL_API_KEY" in result.stderr
    assert "You said" not in result.stdout
    assert not session_file(cli_environment, "default").exists()  # no empty session left behind


def test_ctrl_c_cancels_only_the_current_response_and_keeps_the_session_valid(
    tmp_path: Path, line_reader: Any
) -> None:
    proc = subprocess.Popen(
        [str(TETHER), *FAKE, "chat", "--session", "interrupted"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    errors = line_reader(proc.stderr)
    try:
        proc.stdin.write("wait\n")
        proc.stdin.flush()
        errors.wait_for("[tool] wait_forever()")
        proc.send_signal(signal.SIGINT)
        errors.wait_for("Cancelled.")
        proc.stdin.write("hello again\n")
        proc.stdin.close()
        out = proc.stdout.read()
        proc.wait(timeout=60)
        err = errors.rest()
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "You said: hello again" in out
    assert "Traceback" not in err

    messages = load_session_file(session_file(tmp_path, "interrupted")).messages
    assert_invariant(messages)
    call = next(c for m in messages for c in m.tool_calls if c.name == "wait_forever")
    result = next(r for m in messages for r in m.tool_results if r.call_id == call.id)
    assert result.is_error and "Interrupted" in result.text
    assert messages[-1].text == "You said: hello again"


def test_slash_commands_are_handled_by_the_chat_and_never_reach_the_model(
    chat: Callable[..., Result], cli_environment: Path
) -> None:
    import cli_fake_model

    before = len(cli_fake_model.INSTANCES)
    lines = [
        "hello",
        "/help",
        "/tools",
        "/cost",
        "/model fake/fake-large",
        "/bogus",
        "/save transcript.md",
        "roles",
        "//not a command",
        "/clear",
        "history",
    ]
    result = chat("--session", "slash", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    assert "/compact" in result.stderr and "/save [FILE]" in result.stderr  # /help
    assert "add: Add two integers." in result.stderr  # /tools
    assert "This chat: 1 responses, 1,000 in / 500 out tokens, $0.0020." in result.stderr
    assert "Model: fake/fake-large." in result.stderr
    assert "Unknown command /bogus. /help lists the commands." in result.stderr
    assert "History cleared (6 messages)" in result.stderr
    # "roles" saw only the earlier exchange: no slash command was ever sent
    assert "Roles: user, assistant, user" in result.stdout
    assert "You said: /not a command" in result.stdout
    assert "I was sent 1 messages." in result.stdout  # after /clear

    requests = [r for p in cli_fake_model.INSTANCES[before:] for r in p.requests]
    sent = [m.text for r in requests for m in r.messages if m.role == "user"]
    assert not any(text.startswith("/") and not text.startswith("/not") for text in sent)
    assert [r.model for r in requests] == ["fake-small", "fake-large", "fake-large", "fake-large"]
    saved = (cli_environment / "transcript.md").read_text()
    assert saved.startswith("**you**\n\nhello\n\n**assistant**\n\nYou said: hello")


def test_resuming_shows_the_last_exchanges(chat: Callable[..., Result]) -> None:
    chat("--session", "again", input="first\nsecond\n")
    resumed = chat("--session", "again", input="")
    assert "you: first" in resumed.stderr and "assistant: You said: second" in resumed.stderr


def test_slash_compact_compacts_the_history_now(
    chat: Callable[..., Result], cli_environment: Path
) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text(config.read_text() + '[compaction]\nstrategy = "truncate"\n')
    result = chat("--session", "long", input="one\ntwo\nthree\nfour\n/compact\nhistory\n")
    assert result.exit_code == 0, result.stderr
    assert "[compaction] truncate:" in result.stderr
    stored = load_session_file(session_file(cli_environment, "long")).messages
    assert len(stored) < 10  # 8 messages before /compact, 2 more after


def test_slash_compact_shows_progress_and_keeps_a_smaller_history(
    chat: Callable[..., Result], cli_environment: Path
) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text(config.read_text() + '[compaction]\nstrategy = "truncate"\n')
    result = chat("--session", "short", input="one\ntwo\nthree\nfour\n/compact\n")
    progress = result.stderr.index("Compacting the history")
    assert progress < result.stderr.index("[compaction] truncate:")
    assert "not kept" not in result.stderr
    assert len(load_session_file(session_file(cli_environment, "short")).messages) < 8


def test_slash_compact_keeps_the_history_when_the_summary_is_larger(
    chat: Callable[..., Result], cli_environment: Path
) -> None:
    # The fake model answers the summary request by echoing it: longer than the history.
    result = chat("--session", "echoed", input="one\ntwo\nthree\nfour\n/compact\n")
    assert result.exit_code == 0, result.stderr
    assert "Compacting the history" in result.stderr
    assert "Compaction not kept" in result.stderr and "history is unchanged" in result.stderr
    stored = load_session_file(session_file(cli_environment, "echoed")).messages
    assert [m.text for m in stored if m.role == "user"] == ["one", "two", "three", "four"]
