"""``tether run``: streaming, JSON events, exit statuses, and the errors a user meets first
(no model, no provider, no key, a broken config file). The model is ``cli_fake_model.py`` (next to this file)
loaded with ``-p``; most tests drive the CLI in-process with click's runner, some run the
installed ``tether`` script in a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

TETHER = Path(sys.executable).with_name("tether")
FAKE = ["-p", "cli_fake_model"]
Invoke = Callable[..., Result]


def test_run_streams_the_answer_to_stdout_and_tool_activity_to_stderr(invoke: Invoke) -> None:
    result = invoke(*FAKE, "run", "-m", "fake/fake-small", "--tools", "add", "add 2 3")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Adding.\nTool said: 5\n"
    assert "[tool] add(a=2, b=3)" in result.stderr
    assert "[tool] add done" in result.stderr
    assert (
        "2 turns" in result.stderr and "1 tool call" in result.stderr and "$0.0040" in result.stderr
    )


def test_json_mode_prints_one_object_per_event_ending_with_done(invoke: Invoke) -> None:
    result = invoke(*FAKE, "run", "-m", "fake-small", "--tools", "add", "--json", "add 2 3")
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[-1] == "done" and types.count("done") == 1
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "Adding.Tool said: 5"
    start = next(e for e in events if e["type"] == "tool_start")
    end = next(e for e in events if e["type"] == "tool_end")
    assert (start["name"], start["arguments"]) == ("add", {"a": 2, "b": 3})
    assert (end["content"], end["is_error"]) == ("5", False)
    assert types.index("tool_start") < types.index("tool_end")
    done = events[-1]
    assert (
        done["outcome"] == "completed"
        and done["output"] == "Tool said: 5"
        and done["cost"] == pytest.approx(0.004)
    )


def test_thinking_is_streamed_as_its_own_event_in_json_and_kept_off_stdout_in_plain_mode(
    invoke: Invoke,
) -> None:
    as_json = invoke(*FAKE, "run", "-m", "fake-small", "--json", "think deeply")
    thinking = [
        json.loads(line) for line in as_json.stdout.splitlines() if '"thinking_delta"' in line
    ]
    assert thinking and thinking[0]["text"] == "Pondering deeply."
    plain = invoke(*FAKE, "run", "-m", "fake-small", "think deeply")
    assert plain.stdout == "Thought about deeply\n"


def test_prompt_dash_reads_standard_input(invoke: Invoke) -> None:
    result = invoke(*FAKE, "run", "-m", "fake-small", "-", input="from a pipe\n")
    assert result.stdout == "You said: from a pipe\n"


def test_a_missing_key_is_reported_with_the_variable_before_any_request(invoke: Invoke) -> None:
    import cli_fake_model

    os.environ.pop("FAKE_MODEL_API_KEY")
    before = len(cli_fake_model.INSTANCES)
    result = invoke(*FAKE, "run", "-m", "fake-small", "hello")
    assert result.exit_code == 1
    assert (
        result.stderr.strip() == "Error: No API key for the fake provider. Set FAKE_MODEL_API_KEY."
    )
    assert "Traceback" not in result.output
    built = cli_fake_model.INSTANCES[before:]
    assert built and all(not provider.requests for provider in built)


def test_json_mode_ends_with_an_error_object_when_the_run_cannot_start(invoke: Invoke) -> None:
    os.environ.pop("FAKE_MODEL_API_KEY")
    result = invoke(*FAKE, "run", "-m", "fake-small", "--json", "hello")
    assert result.exit_code == 1
    last = json.loads(result.stdout.splitlines()[-1])
    assert last == {
        "type": "error",
        "message": "No API key for the fake provider. Set FAKE_MODEL_API_KEY.",
    }
    unknown = invoke("run", "-m", "nowhere/model", "--json", "hello")
    assert json.loads(unknown.stdout.splitlines()[-1])["type"] == "error"
    assert 'No provider named "nowhere"' in unknown.stderr


def test_an_uninstalled_provider_says_what_to_install(invoke: Invoke) -> None:
    result = invoke("run", "-m", "anthropic/claude-sonnet-4-5", "hello")
    assert result.exit_code == 1
    assert 'No provider named "anthropic"' in result.stderr
    assert "uv pip install ./plugins/anthropic" in result.stderr
    assert "Traceback" not in result.output


def test_debug_shows_the_traceback_of_an_expected_error(invoke: Invoke) -> None:
    result = invoke("--debug", "run", "-m", "anthropic/claude-sonnet-4-5", "hello")
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "UnknownProviderError" in result.stderr


def test_max_turns_ends_the_run_with_status_1_and_the_limit_named(invoke: Invoke) -> None:
    result = invoke(*FAKE, "run", "-m", "fake-small", "--tools", "add", "--max-turns", "2", "loop")
    assert result.exit_code == 1
    assert result.stderr.count("[tool] add(a=1, b=1)") == 2
    assert "limit of 2 model calls" in result.stderr


def test_a_refusal_exits_1_with_a_message(invoke: Invoke) -> None:
    result = invoke(*FAKE, "run", "-m", "fake-small", "refuse")
    assert result.exit_code == 1
    assert "Error: The model refused to answer." in result.stderr


def test_an_unknown_tool_name_is_a_clean_error_listing_the_registered_ones(invoke: Invoke) -> None:
    result = invoke(*FAKE, "run", "-m", "fake-small", "--tools", "ad", "hi")
    assert result.exit_code == 1
    assert "--tools names 'ad', which is no registered tool or toolset" in result.stderr
    assert '(did you mean "add"?)' in result.stderr and "Registered: add, kb" in result.stderr


def test_an_unimportable_plugin_module_is_a_clean_error(invoke: Invoke) -> None:
    result = invoke("-p", "no_such_module_here", "run", "-m", "fake-small", "hi")
    assert result.exit_code == 1
    assert 'Cannot import the plugin module "no_such_module_here"' in result.stderr
    assert "Traceback" not in result.output


# -- configuration ---------------------------------------------------------------------------
def test_model_tools_and_aliases_come_from_the_config_file(tmp_path: Path, invoke: Invoke) -> None:
    config = tmp_path / "project.toml"
    config.write_text('model = "quick"\ntools = ["add"]\n[aliases]\nquick = "fake/fake-small"\n')
    result = invoke("--config", str(config), *FAKE, "run", "add 20 22")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith("Tool said: 42\n")


def test_tether_toml_in_the_working_directory_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, invoke: Invoke
) -> None:
    monkeypatch.delenv("TETHER_CONFIG")
    (tmp_path / "tether.toml").write_text('model = "fake-small"\nsystem = "Be brief."\n')
    result = invoke(*FAKE, "run", "hi")
    assert result.stdout == "You said: hi\n"


def test_a_malformed_config_file_is_named_in_the_error(tmp_path: Path, invoke: Invoke) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('model = "fake-small\n')
    result = invoke("--config", str(config), *FAKE, "run", "hi")
    assert result.exit_code == 1
    assert str(config) in result.stderr and "not valid TOML" in result.stderr
    assert "Traceback" not in result.output


def test_an_unknown_config_key_is_named_with_its_file(tmp_path: Path, invoke: Invoke) -> None:
    config = tmp_path / "typo.toml"
    config.write_text('model = "fake-small"\n[limits]\nmax_turn = 3\n')
    result = invoke("--config", str(config), *FAKE, "run", "hi")
    assert result.exit_code == 1
    assert str(config) in result.stderr and "unknown key 'limits.max_turn'" in result.stderr
    assert "Traceback" not in result.output


def test_a_missing_config_file_given_with_config_is_an_error(
    tmp_path: Path, invoke: Invoke
) -> None:
    result = invoke("--config", str(tmp_path / "nope.toml"), *FAKE, "run", "hi")
    assert result.exit_code == 1
    assert "nope.toml does not exist" in result.stderr


# -- the installed script, in a real process -----------------------------------------------------
def test_the_installed_script_runs_an_agent_with_a_tool() -> None:
    proc = subprocess.run(
        [str(TETHER), *FAKE, "run", "-m", "fake-small", "--tools", "add", "add 40 2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Adding.\nTool said: 42\n"
    assert "[tool] add(a=40, b=2)" in proc.stderr


def test_the_installed_script_reports_its_version() -> None:
    import tether

    proc = subprocess.run([str(TETHER), "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == f"tether {tether.__version__}"


def test_ctrl_c_cancels_a_run_in_a_tool_and_exits_130(line_reader: Any) -> None:
    proc = subprocess.Popen(
        [str(TETHER), *FAKE, "run", "-m", "fake-small", "--tools", "wait_forever", "wait"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    errors = line_reader(proc.stderr)
    try:
        errors.wait_for("[tool] wait_forever()")
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        err = errors.rest()
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "[tool] wait_forever interrupted" in err
    assert "1 tool call (1 failed)" in err
    assert "Cancelled." in err
    assert "Traceback" not in err


# -- sessions and images -------------------------------------------------------------------
def test_run_with_a_session_continues_the_conversation(invoke: Invoke) -> None:
    first = invoke(*FAKE, "run", "-m", "fake-small", "--session", "work", "hello")
    assert first.exit_code == 0, first.stderr
    second = invoke(*FAKE, "run", "-m", "fake-small", "--session", "work", "roles")
    assert second.stdout == "Roles: user, assistant, user\n"
    chat = invoke(*FAKE, "chat", "-m", "fake-small", "--session", "work", input="roles\n")
    assert "you: roles" in chat.stderr  # the chat shows what the runs said
    assert "Roles: user, assistant, user, assistant, user" in chat.stdout


def test_image_files_are_attached_to_the_prompt(invoke: Invoke, tmp_path: Path) -> None:
    import cli_fake_model

    picture = tmp_path / "chart.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    before = len(cli_fake_model.INSTANCES)
    result = invoke(*FAKE, "run", "-m", "fake-small", "--image", str(picture), "what is this")
    assert result.exit_code == 0, result.stderr
    prompt = cli_fake_model.INSTANCES[before].requests[0].messages[-1]
    assert prompt.text == "what is this"
    images = [block for block in prompt.content if block.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"

    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    refused = invoke(*FAKE, "run", "-m", "fake-small", "--image", str(notes), "hi")
    assert refused.exit_code == 2
    assert "is not a PNG, JPEG, GIF or WebP image" in refused.stderr
