"""The command line's approvals (a y / n / always prompt on a terminal, a suspended run
without one), ``tether run --schema`` and sub-agent activity shown indented."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

TETHER = str(Path(sys.executable).with_name("tether"))
MODEL = ["-p", "cli_compose_model", "run", "-m", "composed/composed-m", "--tools", "remove,helper"]
Invoke = Callable[..., Result]


@pytest.fixture
def cli_config() -> str:
    return '[permissions.rules]\nremove = "ask"\n"remove(notes/*)" = "allow"\n'


def test_the_terminal_asks_and_a_denial_reaches_the_model(
    terminal: Callable[..., Any], screen: Callable[[str], list[str]]
) -> None:
    term = terminal(TETHER, *MODEL, "delete build/a notes/b build/c")
    seen = term.expect("Allow remove(build/a) (rule `remove`)?")
    term.send("n\n")
    seen = term.expect("Allow remove(build/c)", after=seen)
    term.send("a\n")
    seen = term.expect("Results:", after=seen)
    assert term.wait() == 0
    text = " ".join(screen(term.output))
    assert "Denied by the user" in text and "removed notes/b" in text and "removed build/c" in text


def test_without_a_terminal_the_run_suspends_and_says_so(invoke: Invoke) -> None:
    result = invoke(*MODEL, "delete build/a")
    assert result.exit_code == 1
    assert "waiting for approval of: remove (call_1)" in result.stderr
    assert "Agent.resume" in result.stderr


def test_schema_prints_the_validated_json(invoke: Invoke, tmp_path: Path) -> None:
    schema = tmp_path / "trip.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city", "days"],
            }
        )
    )
    result = invoke(*MODEL, "--schema", str(schema), "trip")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"city": "Lisbon", "days": 3}
    assert result.stdout.count("\n") == 1

    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "no-such-type"}')
    refused = invoke(*MODEL, "--schema", str(bad), "trip")
    assert refused.exit_code == 2 and "not a valid JSON schema" in refused.stderr


def test_sub_agent_activity_is_shown_indented(invoke: Invoke) -> None:
    result = invoke(*MODEL, "delegate")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("[tool] helper(")))
    nested = [line for line in lines if line.startswith("  │ ")]
    assert nested == [
        '  │ helper → remove(path="tmp/cache")',
        "  │ helper ← remove done",
        "  │ helper finished: completed",
    ]
    assert lines.index(nested[0]) > start
    assert result.stdout == "Results: cleaned\n"
