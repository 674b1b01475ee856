"""``tether eval`` as a user runs it: the installed command in a subprocess."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tether.testing.cli import run_tether
from tether_evals import EvalReport, dataset_schema

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evals"

HALF = """\
name: half
evaluators: [{type: equals}]
cases:
  - {id: right, inputs: {prompt: "2+2"}, expected_output: "4"}
  - {id: wrong, inputs: {prompt: "3+3"}, expected_output: "6"}
"""

AGENT = """\
import tether
from tether.testing import Reply, ScriptedProvider


def make_agent(setup):
    return tether.Agent(ScriptedProvider([Reply(text="4")]), config=tether.Config(),
                        entry_points=False, skills=False)
"""


def test_the_example_runs_from_the_command_line_with_json_and_html_reports(
    tmp_path: Path,
) -> None:
    for name in ("support.yaml", "agent.py", "invoice.txt"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    out = run_tether(
        tmp_path,
        "eval", "run", "support.yaml", "--agent", "agent.py:make_agent",
        "--json", "report.json", "--html", "report.html", "--trials", "2",
        plugins="evals",
        env={"COLUMNS": "160"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    for case in ("capital", "greeting", "invoice", "notes", "refunds", "flaky-network"):
        assert case in out.stdout
    # Not a terminal: one progress line per finished trial instead of the bar.
    assert "pass capital #1 score 1.000" in out.stdout
    report = EvalReport.model_validate_json((tmp_path / "report.json").read_text())
    assert report.pass_rate == 1.0 and len(report.trials) == 12
    assert report.settings["trials"] == 2
    assert "<!doctype html>" in (tmp_path / "report.html").read_text()


def test_thresholds_make_the_command_fail(tmp_path: Path) -> None:
    (tmp_path / "half.yaml").write_text(HALF)
    (tmp_path / "four.py").write_text(AGENT)
    base = ["eval", "run", "half.yaml", "--agent", "four.py:make_agent"]
    passing = run_tether(tmp_path, *base, plugins="evals", env={})
    assert passing.returncode == 0, passing.stderr
    failing = run_tether(tmp_path, *base, "--min-pass-rate", "0.75", plugins="evals", env={})
    assert failing.returncode == 1
    assert "Thresholds not met: pass rate 0.500 is below 0.750." in failing.stderr
    (tmp_path / "half.yaml").write_text(HALF + "thresholds: {evaluators: {equals: 0.9}}\n")
    from_file = run_tether(tmp_path, *base, plugins="evals", env={})
    assert from_file.returncode == 1
    assert 'check "equals" scored 0.500, below 0.900' in from_file.stderr


def test_a_bad_agent_spec_and_a_bad_dataset_get_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "half.yaml").write_text(HALF)
    out = run_tether(
        tmp_path, "eval", "run", "half.yaml", "--agent", "nowhere", plugins="evals", env={}
    )
    assert out.returncode == 1 and "MODULE:NAME or FILE.py:NAME" in out.stderr
    assert "Traceback" not in out.stderr
    (tmp_path / "bad.yaml").write_text("cases: [{id: a}]\n")
    bad = run_tether(
        tmp_path, "eval", "run", "bad.yaml", "-m", "demo/echo", plugins="evals", env={}
    )
    assert bad.returncode == 1 and "cases.0.inputs" in bad.stderr


def test_schema_and_evaluators_are_listed(tmp_path: Path) -> None:
    schema = run_tether(tmp_path, "eval", "schema", plugins="evals", env={})
    assert schema.returncode == 0 and json.loads(schema.stdout) == dataset_schema()
    listed = run_tether(tmp_path, "eval", "evaluators", plugins="evals", env={})
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert {"equals", "judge", "retrieval", "trajectory", "events"} <= set(names)
