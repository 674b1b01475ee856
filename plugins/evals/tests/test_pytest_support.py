"""A dataset as parametrised pytest tests, its thresholds as assertions."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tether.testing import Reply
from tether_evals import load_dataset
from tether_evals.pytest_support import case_params, check_case

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evals"
DATASET = load_dataset(EXAMPLE / "support.yaml")


@pytest.mark.parametrize("case", case_params(DATASET))
def test_example_case(case: object, example_agent: ModuleType) -> None:
    agent = example_agent
    summary = check_case(DATASET, case, agent.make_agent, models=agent.eval_models(), trials=2)  # type: ignore[arg-type]
    assert summary.trials == 2


def test_the_parameters_are_named_after_the_cases() -> None:
    assert [p.id for p in case_params(DATASET)] == [c.id for c in DATASET.cases]


def test_a_case_below_its_threshold_fails_with_the_reasons(example_agent: ModuleType) -> None:
    agent = example_agent
    agent.SCRIPTS["capital"] = [Reply(text="Lyon.")]
    capital = next(c for c in DATASET.cases if c.id == "capital")
    with pytest.raises(AssertionError) as failed:
        check_case(DATASET, capital, agent.make_agent, models=agent.eval_models())
    message = str(failed.value)
    assert "case capital: mean score" in message
    assert "judge 0.000 - The answer does not name Paris." in message
    assert "contains 0.000 - missing from the answer: 'Paris'" in message


def test_a_threshold_given_to_check_case_wins_over_the_dataset(example_agent: ModuleType) -> None:
    agent = example_agent
    agent.SCRIPTS["capital"] = [Reply(text="Paris, or maybe Lyon.")]
    capital = next(c for c in DATASET.cases if c.id == "capital")
    summary = check_case(
        DATASET, capital, agent.make_agent, models=agent.eval_models(), min_score=0.5
    )
    assert summary.passes == 1
