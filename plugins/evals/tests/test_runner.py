"""Running an eval: repeated trials, the concurrency limit, seeds, workspaces,
attachments, deadlines, the results file, and the run log."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

import tether
from tether import ImageBlock
from tether.testing import Reply, ScriptedProvider, call
from tether_evals import Dataset, TrialSetup, read_results, run_eval

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def dataset(*cases: dict[str, Any], checks: list[dict[str, Any]] | None = None) -> Dataset:
    return Dataset.model_validate(
        {
            "name": "t",
            "evaluators": checks or [{"type": "contains"}],
            "cases": [{"inputs": {"prompt": "p"}, "expected_output": "ok", **c} for c in cases],
        }
    )


def agent(provider: ScriptedProvider, *tools: Any, cwd: Path | None = None) -> tether.Agent:
    return tether.Agent(
        provider,
        tools=list(tools),
        config=tether.Config(),
        entry_points=False,
        skills=False,
        cwd=cwd,
    )


def test_repeated_trials_give_pass_rate_pass_at_k_spread_and_seeds() -> None:
    seen: list[tuple[int, int | None]] = []

    def make(setup: TrialSetup) -> tether.Agent:
        seen.append((setup.trial, setup.seed))
        answer = "not this time" if setup.trial == 1 else "ok"
        return agent(ScriptedProvider([Reply(text=answer)]))

    report = asyncio.run(run_eval(dataset({"id": "flaky"}), make, trials=3, seed=41))
    case = report.case("flaky")
    assert (case.trials, case.passes) == (3, 2)
    assert case.pass_rate == pytest.approx(2 / 3)
    assert case.pass_at_k[1] == pytest.approx(2 / 3) and case.pass_at_k[3] == 1.0
    assert case.mean_score == pytest.approx(2 / 3) and case.stdev_score == pytest.approx(
        0.57735, rel=1e-4
    )
    assert sorted(seen) == [(0, 41), (1, 42), (2, 43)]
    assert not case.passed and report.pass_rate == pytest.approx(2 / 3)


def test_no_more_trials_run_at_once_than_the_concurrency_limit() -> None:
    active, peak = 0, 0
    both = asyncio.Barrier(2)

    @tether.tool
    async def work() -> str:
        """Waits until another trial works too."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await both.wait()  # needs two trials at once: the limit of 2 must allow it
        active -= 1
        return "done"

    def make(setup: TrialSetup) -> tether.Agent:
        return agent(ScriptedProvider([Reply(tool_calls=[call("work")]), Reply(text="ok")]), work)

    cases = [{"id": f"c{n}"} for n in range(6)]
    report = asyncio.run(run_eval(dataset(*cases), make, concurrency=2, trial_timeout=60))
    assert report.pass_rate == 1.0
    assert peak == 2


def test_files_history_and_attachments_reach_the_agent(tmp_path: Path) -> None:
    (tmp_path / "pixel.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("attached text")
    data = dataset(
        {
            "id": "rich",
            "inputs": {
                "prompt": "Look.",
                "history": [
                    {"role": "user", "text": "earlier"},
                    {"role": "assistant", "text": "yes"},
                ],
                "files": {"src/app.py": "print('hi')\n"},
                "attachments": [{"path": "pixel.png"}, {"path": "notes.txt"}],
            },
        }
    ).model_copy(update={"base_dir": tmp_path})
    providers: list[ScriptedProvider] = []
    workspaces: list[str] = []

    @tether.tool
    def read_app(ctx: tether.ToolContext) -> str:
        """Read src/app.py of the workspace."""
        return (Path(ctx.cwd) / "src" / "app.py").read_text()

    def make(setup: TrialSetup) -> tether.Agent:
        workspaces.append(str(setup.workspace))
        providers.append(ScriptedProvider([Reply(tool_calls=[call("read_app")]), Reply(text="ok")]))
        return agent(providers[-1], read_app, cwd=setup.workspace)

    report = asyncio.run(run_eval(data, make))
    trial = report.trials[0]
    assert trial.tool_calls[0].result == "print('hi')\n" and trial.passed
    first = providers[0].requests[0].messages
    assert [m.text for m in first[:2]] == ["earlier", "yes"]
    assert "Look." in first[2].text and "## Attachment: notes.txt\nattached text" in first[2].text
    assert any(isinstance(b, ImageBlock) and b.mime_type == "image/png" for b in first[2].content)
    assert not Path(workspaces[0]).exists()  # the workspace is removed after the trial


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil", "a/../../evil", "C:evil", ""])
def test_a_file_outside_the_workspace_is_refused_when_the_dataset_loads(
    tmp_path: Path, name: str
) -> None:
    from tether_evals import DatasetError, load_dataset

    path = tmp_path / "cases.json"
    case = {"id": "escape", "inputs": {"prompt": "p", "files": {name: "x"}}}
    path.write_text(json.dumps({"cases": [case]}))
    with pytest.raises(DatasetError, match="must be a relative path inside the workspace"):
        load_dataset(path)


def test_a_trial_past_its_deadline_is_recorded_as_an_error() -> None:
    @tether.tool
    async def hang() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return ""

    def make(setup: TrialSetup) -> tether.Agent:
        return agent(ScriptedProvider([Reply(tool_calls=[call("hang")])]), hang)

    report = asyncio.run(run_eval(dataset({"id": "slow"}), make, trial_timeout=0.2))
    assert report.trials[0].error == "TimeoutError: the trial took longer than 0.2 s"
    assert report.case("slow").passes == 0


def test_the_results_file_resumes_and_ignores_a_line_cut_short(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    runs: list[str] = []

    def make(setup: TrialSetup) -> tether.Agent:
        runs.append(setup.case.id)
        return agent(ScriptedProvider([Reply(text="ok")]))

    data = dataset({"id": "a"}, {"id": "b"}, {"id": "c"})
    asyncio.run(run_eval(data.model_copy(update={"cases": data.cases[:2]}), make, results=results))
    with results.open("a") as handle:
        handle.write('{"case_id": "c", "tri')  # the process died mid-write
    assert [t.case_id for t in read_results(results)] == ["a", "b"]
    report = asyncio.run(run_eval(data, make, results=results))
    assert runs == ["a", "b", "c"]
    assert [t.case_id for t in read_results(results)] == ["a", "b", "c"]
    assert [c.case_id for c in report.cases] == ["a", "b", "c"]


def test_a_results_file_of_something_else_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"role": "user"}\n{"role": "assistant"}\n')
    from tether_evals import EvalError

    with pytest.raises(EvalError, match="line 1 is not a trial result"):
        read_results(other)


def test_each_trial_links_to_its_run_in_the_run_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.runlog import open_run_log

    monkeypatch.setenv("TETHER_RUN_LOG", str(tmp_path / "runs.sqlite"))
    report = asyncio.run(
        run_eval(
            dataset({"id": "a"}),
            lambda s: tether.Agent(  # the run log is a plugin: this agent loads plugins
                ScriptedProvider([Reply(text="ok")]), config=tether.Config(), skills=False
            ),
        )
    )
    run_id = report.trials[0].run_id
    assert run_id and report.case("a").run_ids == [run_id]
    log = open_run_log(tmp_path / "runs.sqlite")
    log.flush()
    assert log.get(run_id).run_id == run_id


def test_no_secret_reaches_the_results_file_or_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether_evals import report_html

    canary = "canary-7f3a9c1e5b2d4f60"
    monkeypatch.setenv("EVAL_CANARY_API_KEY", canary)

    @tether.tool
    def leak() -> str:
        """Returns a secret."""
        return f"the key is {canary}"

    def make(setup: TrialSetup) -> tether.Agent:
        script = [Reply(tool_calls=[call("leak")]), Reply(text=f"ok, key {canary}")]
        return agent(ScriptedProvider(script), leak)

    results = tmp_path / "results.jsonl"
    data = dataset({"id": "leaky"}, checks=[{"type": "contains", "value": canary}])
    report = asyncio.run(run_eval(data, make, results=results))
    assert report.trials[0].passed  # the check saw the real answer
    for text in (results.read_text(), report.model_dump_json(), report_html(report)):
        assert canary not in text
    assert "***" in report.trials[0].text
