"""Escape sequences in what a model, a tool, a session or the run log wrote never reach
the terminal: every command that prints such text shows its control characters as
visible ``\\uXXXX`` escapes (window titles, OSC 52 clipboard writes, OSC 8 links, cursor
movement and bidi overrides stay inert)."""

from __future__ import annotations

import io
import json
import re
import uuid

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.events import Retry, TextDelta, ThinkingDelta, ToolEnd, ToolStart
from tether.messages import ToolResultBlock
from tether_cli import cli
from tether_cli.terminal_text import neutralize

HOSTILE = ["-p", "cli_hostile_model"]
# Everything a terminal might obey: C0 but newline and tab, DEL, C1, bidi controls.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

SEQUENCES = [
    "\x1b]0;pwned title\x07",  # window title
    "\x1b]52;c;Y2FuYXJ5\x07",  # clipboard write
    "\x1b]8;;https://evil.example/\x1b\\innocent\x1b]8;;\x1b\\",  # hidden link
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b[1A\x1b[2K",  # erase the line above
    "\x9b31m\x9d0;title\x9c",  # 8-bit CSI and OSC
    "\x1bP+q544e\x1b\\",  # DCS request
    "\r",
    "\x08\x08",
    "\u202eevil\u202c",
]
fragments = st.one_of(
    st.sampled_from(SEQUENCES),
    st.characters(min_codepoint=0, max_codepoint=0x9F).map(str),
    st.sampled_from(["\u202a", "\u202d", "\u2066", "\u2069"]),
    st.text(max_size=8),
)
hostile_text = st.lists(fragments, min_size=1, max_size=12).map("".join)


@pytest.fixture(autouse=True)
def run_log_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_RUN_LOG", raising=False)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def assert_inert(result: Result) -> None:
    for name, raw in (("stdout", result.stdout_bytes), ("stderr", result.stderr_bytes)):
        text = raw.decode("utf-8")
        assert not FORBIDDEN.search(text), f"a control character reached {name}: {text!r}"


@given(hostile_text)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_no_escape_from_a_model_tool_session_or_log_reaches_the_terminal(payload: str) -> None:
    import cli_hostile_model  # importable once the CLI environment is set up

    cli_hostile_model.PAYLOAD = payload
    session = f"s-{uuid.uuid4().hex}"
    tools = ["--tools", "echo_text,fail_with"]
    ran = invoke(*HOSTILE, "run", "-m", "hostile/echo", *tools, "-s", session, "go")
    assert ran.exit_code == 0, ran.stderr
    assert_inert(ran)
    assert neutralize(payload).strip() in ran.stdout  # shown, visibly, not swallowed

    as_json = invoke(*HOSTILE, "run", "-m", "hostile/echo", *tools, "--json", "go")
    assert_inert(as_json)
    answers = [json.loads(line) for line in as_json.stdout.splitlines()]
    deltas = "".join(e["text"] for e in answers if e["type"] == "text_delta")
    assert payload in deltas  # the JSON still carries the exact text

    listed = invoke("runs", "--all")
    assert_inert(listed)
    run_id = json.loads(invoke("runs", "--json").stdout.splitlines()[0])["run_id"]
    for command in (
        ["trace", run_id],
        ["trace", run_id, "--json"],
        ["sessions", "show", session],
        ["sessions", "show", session, "--json"],
        ["sessions", "list"],
        ["stats"],
    ):
        shown = invoke(*command)
        assert shown.exit_code == 0, (command, shown.stderr)
        assert_inert(shown)
    assert "\\u001b" in invoke("sessions", "show", session).stdout or "\x1b" not in payload


# Sequences rich itself writes on a terminal: colours, cursor up, line erase, cursor show.
RICH_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[[0-9]*[AK]|\x1b\[\?25[hl]|\r")


@given(hostile_text)
@settings(max_examples=40, deadline=None)
def test_the_terminal_renderer_shows_escapes_from_events_visibly(payload: str) -> None:
    from rich.console import Console

    from tether_cli.render import RichRenderer

    out, err = io.StringIO(), io.StringIO()
    renderer = RichRenderer(
        Console(file=out, force_terminal=True, color_system="truecolor", width=100),
        Console(file=err, force_terminal=True, color_system="truecolor", width=100),
    )
    result = ToolResultBlock(call_id="c1", content=payload)
    failed = ToolResultBlock(call_id="c2", content=payload, is_error=True)
    for event in (
        ThinkingDelta(payload),
        TextDelta(payload),
        ToolStart("c1", "echo_text", {"text": payload}),
        ToolEnd("c1", "echo_text", result, 0.1),
        ToolStart("c2", "fail_with", {payload: 1}),
        ToolEnd("c2", "fail_with", failed, 0.1),
        Retry(attempt=0, delay=0.0, error=RuntimeError(payload)),
        TextDelta(payload),
    ):
        renderer.event(event)
    renderer.notice(payload)
    renderer.error(payload)
    renderer.finish_line()
    for written in (out.getvalue(), err.getvalue()):
        assert not FORBIDDEN.search(RICH_OWN.sub("", written)), repr(written)
    if "\x1b" in payload:
        assert "\\u001b" in out.getvalue()


def test_neutralize_keeps_text_newlines_and_tabs_and_escapes_the_rest() -> None:
    assert neutralize("a\tb\nc — ü 日本 🙂") == "a\tb\nc — ü 日本 🙂"
    assert neutralize("line\r\nnext") == "line\nnext"
    assert neutralize("\x1b]0;x\x07") == "\\u001b]0;x\\u0007"
    assert neutralize("\x9b\u202e\ud83d") == "\\u009b\\u202e\\ud83d"


@given(st.text())
def test_neutralized_json_is_the_same_json(text: str) -> None:
    document = json.dumps({"text": text}, ensure_ascii=False)
    assert json.loads(neutralize(document)) == {"text": text}
    assert not FORBIDDEN.search(neutralize(text))
