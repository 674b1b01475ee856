"""``tether runs``, ``tether trace`` and ``tether stats`` over runs made with ``tether run``
(the fake model of ``cli_fake_model.py``), and the cost breakdown of the summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tether_cli import cli

FAKE = ["-p", "cli_fake_model"]


@pytest.fixture(autouse=True)
def run_log_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run log in its default place, the data directory of the CLI environment."""
    monkeypatch.delenv("TETHER_RUN_LOG", raising=False)
    monkeypatch.setenv("COLUMNS", "160")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_json(*args: str) -> dict[str, object]:
    result = invoke(*FAKE, "run", "-m", "fake/fake-small", "--json", *args)
    assert result.exit_code == 0, result.stderr
    done: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return done


def test_the_summary_line_breaks_the_cost_down() -> None:
    result = invoke(*FAKE, "run", "-m", "fake/fake-small", "--tools", "add", "add 2 3")
    assert result.exit_code == 0, result.stderr
    assert "$0.0040 (in $0.0020, out $0.0020)" in result.stderr
    done = run_json("hello")
    assert done["cost_breakdown"] == {
        "input": pytest.approx(0.001),
        "output": pytest.approx(0.001),
        "cache_read": 0.0,
        "cache_write": 0.0,
    }
    assert done["cache_hit_ratio"] == 0.0 and isinstance(done["run_id"], str)


def test_runs_lists_recent_runs_newest_first(cli_environment: Path) -> None:
    first = run_json("--tools", "add", "add 2 3")
    second = run_json("hello there")
    listing = invoke("runs")
    assert listing.exit_code == 0, listing.stderr
    assert (cli_environment / "data" / "runs.sqlite").is_file()
    lines = listing.stdout.splitlines()
    assert lines[0].startswith(str(second["run_id"])[:12]) and "hello there" in lines[0]
    assert lines[1].startswith(str(first["run_id"])[:12]) and "add 2 3" in lines[1]
    assert "completed" in lines[1] and "2 turns" in lines[1] and "$0.0040" in lines[1]
    as_json = [json.loads(line) for line in invoke("runs", "--json").stdout.splitlines()]
    assert [r["run_id"] for r in as_json] == [second["run_id"], first["run_id"]]


def test_trace_shows_turns_model_calls_and_tool_calls_as_a_tree() -> None:
    done = run_json("--tools", "add", "add 2 3")
    result = invoke("trace", str(done["run_id"])[:8])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert f"run {str(done['run_id'])[:12]}" in out and "completed" in out
    assert re.search(r"turn 1\n.*model call · fake/fake-small · [\d.]+ms .*1,000 in / 500 out", out)
    assert '✓ add({"a": 2, "b": 3})' in out and "→ 5" in out
    assert "turn 2" in out and "Tool said: 5" in out
    tree = json.loads(invoke("trace", str(done["run_id"]), "--json").stdout)
    assert [c["title"] for c in tree["children"]] == ["turn 1", "turn 2"]
    assert [c["kind"] for c in tree["children"][0]["children"]] == ["model", "tool"]


def test_trace_of_an_unknown_run_says_how_to_find_one() -> None:
    run_json("hello")
    result = CliRunner().invoke(cli, ["trace", "nope"])
    assert result.exit_code == 1
    assert 'No run with id "nope"' in result.stderr and "tether runs" in result.stderr


def test_trace_html_writes_a_self_contained_timeline(cli_environment: Path) -> None:
    done = run_json("--tools", "add", "add 2 3")
    result = invoke("trace", str(done["run_id"]), "--html", "page.html")
    assert result.exit_code == 0, result.stderr
    page = (cli_environment / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and str(done["run_id"]) in page
    assert "src=" not in page and "href=" not in page  # nothing loaded from elsewhere
    assert page.count('class="row') == 6  # run, 2 turns, 2 model calls, 1 tool call
    assert "kind-tool" in page and "&quot;a&quot;: 2" in page
    default = invoke("trace", str(done["run_id"]), "--html")
    assert default.stdout.strip() == f"Wrote trace-{str(done['run_id'])[:12]}.html"


def test_stats_total_runs_and_tool_error_rates() -> None:
    import tether
    from tether.testing import Reply, ScriptedProvider, call

    @tether.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a=1, b=2), call("add", a="x", b=2)]),
            Reply(text="one failed"),
        ]
    )
    from tether.config import load_config
    from tether_runlog import plugin as runlog_plugin

    on = load_config().model_copy(update={"observers": {"runlog": {"enabled": True}}})
    # An application's agent records too, once configured to.
    tether.Agent(provider, tools=[add], config=on, plugins=[runlog_plugin]).run_sync("add twice")
    run_json("--tools", "add", "add 2 3")
    run_json("hello")
    result = invoke("stats")
    assert result.exit_code == 0, result.stderr
    assert "3 runs (3 completed)" in result.stdout
    assert re.search(r"add\s+3\s+1\s+33\.3%", result.stdout)
    totals = json.loads(invoke("stats", "--json").stdout)
    assert totals["tool_calls"] == 3 and totals["tool_errors"] == 1
    assert totals["cost"] == pytest.approx(0.004 + 0.002)


def test_the_run_log_turned_off_is_said_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_RUN_LOG", "off")
    run_json("hello")
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 1 and "turned off" in result.stderr
