"""The command line in a real pseudo-terminal, as a user sees it: Markdown rendered on a
terminal (and left alone in a pipe), Ctrl-C in chat keeping what was streamed, and a
closed pipe (``| head``) ending quietly."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from tether.sessions import load_session_file
from tether.testing import assert_invariant

TETHER = str(Path(sys.executable).with_name("tether"))
FAKE = ["-p", "cli_fake_model"]
Invoke = Callable[..., Result]


def test_markdown_is_rendered_on_a_terminal_and_left_as_written_in_a_pipe(
    terminal: Callable[..., Any], screen: Callable[[str], list[str]], invoke: Invoke
) -> None:
    term = terminal(TETHER, *FAKE, "run", "-m", "fake-small", "markdown")
    assert term.wait() == 0
    shown = [line.strip() for line in screen(term.output) if line.strip()]
    assert shown[:4] == ["Result", "The answer is 42.", "• first", "• second"]
    assert "\x1b[1m42\x1b[0m" in term.output  # bold on the terminal
    assert "**" not in "".join(shown) and "# Result" not in "".join(shown)  # once redrawn

    piped = invoke(*FAKE, "run", "-m", "fake-small", "markdown")
    assert piped.stdout == "# Result\n\nThe answer is **42**.\n\n- first\n- second\n"


def test_ctrl_c_in_chat_keeps_the_partial_answer_marked_interrupted(
    terminal: Callable[..., Any], screen: Callable[[str], list[str]], cli_environment: Path
) -> None:
    term = terminal(TETHER, *FAKE, "chat", "-m", "fake-small", "--session", "talk")
    seen = term.expect(">")
    term.send("stall\n")
    seen = term.expect("Partial answer", after=seen)
    term.send("\x03")  # Ctrl-C, typed on the terminal: SIGINT to the chat
    seen = term.expect("Cancelled.", after=seen)
    usage = next(line for line in screen(term.output) if "fake/fake-small · 0 turns" in line)
    assert " 0 in / 0 out tokens" not in usage  # the interrupted response is counted (estimated)
    seen = term.expect(">", after=seen)
    term.send("roles\n")
    seen = term.expect("Roles: user, assistant, user", after=seen)
    term.send("/exit\r")
    assert term.wait() == 0
    assert "Traceback" not in term.output

    messages = load_session_file(cli_environment / "data" / "sessions" / "talk.jsonl").messages
    assert_invariant(messages)
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    interrupted = messages[1]
    assert interrupted.text == "Partial answer\n\n[Interrupted by the user.]"
    assert interrupted.meta.interrupted is True  # type: ignore[attr-defined]
    assert interrupted.meta.model == "fake/fake-small"
    assert messages[3].text == "Roles: user, assistant, user"


def test_a_closed_pipe_ends_the_run_quietly_with_status_0(cli_environment: Path) -> None:
    config = cli_environment / "slow.toml"
    config.write_text("[providers.demo]\ndelay = 0.005\n")
    words = " ".join(f"word{n}" for n in range(2000))
    proc = subprocess.Popen(
        [TETHER, "--config", str(config), "run", "-m", "demo/echo", words],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(12) == b"Echo: word0 "  # what `| head -c 12` reads
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert err == ""


def test_ctrl_c_mid_answer_shows_the_partial_answer_once_in_run_and_chat(
    terminal: Callable[..., Any], screen: Callable[..., list[str]]
) -> None:
    """The answer is padded to the terminal's width while it streams; Ctrl-C there must
    not leave its first line on the screen twice (the final redraw one line low)."""
    for command in (["run", "-m", "fake-small", "stall"], ["chat", "-m", "fake-small"]):
        term = terminal(TETHER, *FAKE, *command, columns=60)
        seen = 0
        if command[0] == "chat":
            seen = term.expect(">")
            term.send("stall\n")
        seen = term.expect("Partial answer", after=seen)
        term.send("\x03")  # Ctrl-C while the model is still answering
        seen = term.expect("Cancelled.", after=seen)
        if command[0] == "chat":
            term.expect(">", after=seen)
            term.send("/exit\r")
        term.wait()
        shown = screen(term.output, columns=60)
        assert sum("Partial answer" in line for line in shown) == 1, (command, shown)
        assert "Traceback" not in term.output


def test_chat_edits_lines_with_arrow_keys_and_recalls_them_in_later_chats(
    terminal: Callable[..., Any], cli_environment: Path
) -> None:
    term = terminal(TETHER, *FAKE, "chat", "-m", "fake-small", "--session", "edit")
    seen = term.expect(">")
    term.send("hello wrld")
    term.send("\x1b[D\x1b[D\x1b[D")  # Left three times: the cursor is before "rld"
    term.send("o\r")
    seen = term.expect("You said: hello world", after=seen)
    seen = term.expect(">", after=seen)
    term.send("/cost\r")
    seen = term.expect("tokens", after=seen)
    seen = term.expect(">", after=seen)
    term.send("/exit\r")
    assert term.wait() == 0

    again = terminal(TETHER, *FAKE, "chat", "-m", "fake-small", "--session", "edit")
    seen = again.expect(">")
    again.send("\x1b[A" * 3 + "\r")  # Up three times: past /exit and /cost to the prompt
    seen = again.expect("You said: hello world", after=seen)
    again.expect(">", after=seen)
    again.send("/exit\r")
    assert again.wait() == 0
    assert "\x1b[D" not in again.output and "Traceback" not in again.output

    messages = load_session_file(cli_environment / "data" / "sessions" / "edit.jsonl").messages
    assert [m.text for m in messages if m.role == "user"] == ["hello world", "hello world"]
    history = (cli_environment / "data" / "chat-history" / "edit").read_text()
    assert "hello world" in history and "/cost" in history


def test_chat_reads_plain_lines_when_stdin_is_not_a_terminal(invoke: Invoke) -> None:
    result = invoke(*FAKE, "chat", "-m", "fake-small", "-s", "piped", input="hi there\n")
    assert "You said: hi there" in result.stdout
