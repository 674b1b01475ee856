"""The example shipped with the docs runs offline and every built-in evaluator scores it."""

from __future__ import annotations

import asyncio
from types import ModuleType

from tether.testing import Reply, call
from tether_evals import Dataset, EvalReport, load_evaluators, run_eval


def run_example(agent: ModuleType, dataset: Dataset) -> EvalReport:
    return asyncio.run(run_eval(dataset, agent.make_agent, models=agent.eval_models()))


def test_the_example_passes_and_every_builtin_evaluator_scored_it(
    example_agent: ModuleType, example_dataset: Dataset
) -> None:
    report = run_example(example_agent, example_dataset)
    failing = [
        (t.case_id, s.check, s.reason) for t in report.trials for s in t.scores if not s.passed
    ]
    assert failing == []
    assert report.pass_rate == 1.0 and not report.failures()
    used = {s.type for t in report.trials for s in t.scores}
    assert used == set(load_evaluators().names())
    flaky = report.trials[[t.case_id for t in report.trials].index("flaky-network")]
    (events,) = [s for s in flaky.scores if s.type == "events"]
    assert events.details["retries"] == 1  # the scripted rate limit, read from the events
    assert [e["type"] for e in flaky.events].count("retry") == 1


def test_the_judge_keeps_its_versioned_prompt_and_reasoning(
    example_agent: ModuleType, example_dataset: Dataset
) -> None:
    report = run_example(example_agent, example_dataset)
    (judge,) = [s for t in report.trials for s in t.scores if s.type == "judge"]
    assert judge.details["prompt_version"] == "judge-v1"
    assert "The capital of France is Paris." in judge.details["prompt"]
    assert "names Paris as the capital" in judge.details["prompt"]
    assert judge.details["reasoning"] == "The answer names Paris, which is correct."
    assert judge.reason == judge.details["reasoning"]


def test_the_example_fails_where_the_agent_goes_wrong(
    example_agent: ModuleType, example_dataset: Dataset
) -> None:
    agent = example_agent
    agent.SCRIPTS["capital"] = [Reply(text="The capital of France is Lyon.")]
    agent.SCRIPTS["notes"] = [
        Reply(tool_calls=[call("shell", command="cat NOTES.md")]),
        Reply(tool_calls=[call("read_file", path="NOTES.md")]),
        Reply(text="Never on Fridays."),
    ]
    report = run_example(agent, example_dataset)
    capital = {s.type: s for t in report.trials if t.case_id == "capital" for s in t.scores}
    assert not capital["judge"].passed and capital["judge"].value == 0.0
    assert not capital["contains"].passed and not capital["regex"].passed
    notes = {s.type: s for t in report.trials if t.case_id == "notes" for s in t.scores}
    assert not notes["trajectory"].passed
    assert "forbidden tool(s): shell" in notes["trajectory"].reason
    assert report.case("capital").passes == 0 and report.case("greeting").passes == 1
    assert report.failures()  # pass rate 4/6 is below the dataset's 0.8
