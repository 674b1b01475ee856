"""``compare_reports`` and ``tether eval compare``: which cases changed, and how."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.testing.cli import run_tether
from tether_evals import (
    EvalError,
    ScoreRecord,
    TrialResult,
    compare_reports,
    comparison_html,
    load_report,
)
from tether_evals.report import build_report


def trials(scores: dict[str, list[float]]) -> list[TrialResult]:
    """Trials whose one check scores ``value`` and passes at 1.0."""
    return [
        TrialResult(
            case_id=case,
            trial=n,
            scores=[ScoreRecord(check="c", type="contains", value=v, passed=v == 1.0)],
        )
        for case, values in scores.items()
        for n, v in enumerate(values)
    ]


A = {
    "fixed": [0.0, 1.0],
    "broken": [1.0, 1.0],
    "better": [0.2],
    "worse": [0.8],
    "same": [0.5],
    "gone": [1.0],
}
B = {
    "fixed": [1.0, 1.0],
    "broken": [1.0, 0.0],
    "better": [0.6],
    "worse": [0.4],
    "same": [0.5],
    "new": [1.0],
}


def test_cases_are_paired_by_id_and_their_change_named() -> None:
    comparison = compare_reports(build_report(None, trials(A)), build_report(None, trials(B)))
    assert {c.case_id: c.change for c in comparison.cases} == {
        "fixed": "fixed",
        "broken": "broken",
        "better": "better",
        "worse": "worse",
        "same": "same",
    }
    assert comparison.only_a == ["gone"] and comparison.only_b == ["new"]
    assert comparison.mean_difference == pytest.approx((0.5 - 0.5 + 0.4 - 0.4 + 0) / 5)
    assert sorted(c.case_id for c in comparison.changed) == ["better", "broken", "fixed", "worse"]
    page = comparison_html(comparison)
    assert "broken" in page and "same</td>" not in page


def test_reports_load_from_json_and_from_results_files(tmp_path: Path) -> None:
    report = build_report(None, trials(A), name="a")
    (tmp_path / "a.json").write_text(report.model_dump_json())
    (tmp_path / "a.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in trials(A)))
    from_json, from_results = load_report(tmp_path / "a.json"), load_report(tmp_path / "a.jsonl")
    assert from_json.cases == report.cases
    assert [c.mean_score for c in from_results.cases] == [c.mean_score for c in report.cases]
    (tmp_path / "b.json").write_text('{"hello": 1}')
    with pytest.raises(EvalError, match="not an eval report"):
        load_report(tmp_path / "b.json")


def test_fail_if_worse_makes_the_command_fail_only_when_b_is_worse(tmp_path: Path) -> None:
    good = {f"c{n}": [1.0] for n in range(30)}
    bad = {f"c{n}": [0.0 if n % 3 else 1.0] for n in range(30)}
    for name, scores in (("good", good), ("bad", bad)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(t.model_dump_json() + "\n" for t in trials(scores))
        )
    worse = run_tether(
        tmp_path, "eval", "compare", "good.jsonl", "bad.jsonl", "--fail-if-worse",
        plugins="evals", env={"COLUMNS": "200"},
    )  # fmt: skip
    assert worse.returncode == 1 and "significantly worse" in worse.stderr
    assert "20 of 30 cases changed" in worse.stdout and ": worse" in worse.stdout
    better = run_tether(
        tmp_path, "eval", "compare", "bad.jsonl", "good.jsonl", "--fail-if-worse",
        "--html", "cmp.html", plugins="evals", env={},
    )  # fmt: skip
    assert better.returncode == 0, better.stderr
    assert "fixed" in (tmp_path / "cmp.html").read_text()
