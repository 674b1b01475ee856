"""``demo/echo``: the built-in model that needs no key, for a first run."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result

Invoke = Callable[..., Result]


@pytest.fixture
def fake_model_key() -> bool:
    return False


def test_the_demo_model_runs_with_no_key_and_streams_word_by_word(invoke: Invoke) -> None:
    result = invoke("run", "-m", "demo/echo", "Say hello in three languages.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Echo: Say hello in three languages.\n"
    assert "demo/echo · 1 turn" in result.stderr

    events = [
        json.loads(line)
        for line in invoke("run", "-m", "demo/echo", "--json", "a b c").stdout.splitlines()
    ]
    assert [e["text"] for e in events if e["type"] == "text_delta"] == ["Echo: ", "a ", "b ", "c"]
    assert events[-1]["outcome"] == "completed"


def test_the_demo_model_calls_the_tools_the_prompt_names(invoke: Invoke) -> None:
    result = invoke(
        "-p", "cli_fake_model", "run", "-m", "demo/echo", "--tools", "add", "add a=2 b=40"
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Calling add.\nadd returned: 42\n"
    assert "[tool] add(a=2, b=40)" in result.stderr


def test_a_tool_called_without_its_arguments_gets_the_harness_error(invoke: Invoke) -> None:
    result = invoke(
        "-p", "cli_fake_model", "run", "-m", "demo/echo", "--tools", "add", "add please"
    )
    assert result.exit_code == 0, result.stderr
    assert "add failed:" in result.stdout


def test_a_typo_in_the_demo_settings_is_a_clean_error(
    invoke: Invoke, cli_environment: object
) -> None:
    from pathlib import Path

    config = Path(str(cli_environment)) / "tether-test.toml"
    config.write_text("[providers.demo]\ndelay = -1\n")
    result = invoke("run", "-m", "demo/echo", "hi")
    assert result.exit_code == 1
    assert "[providers.demo] delay must be a number of seconds >= 0" in result.stderr
