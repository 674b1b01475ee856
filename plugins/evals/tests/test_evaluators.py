"""Built-in evaluators on hand-made trials, and third-party evaluators through the hook."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

import tether
from tether import DuplicateComponentError, UnknownComponentError
from tether_evals import (
    Case,
    Check,
    EvalContext,
    EvaluatorError,
    Score,
    ToolCallRecord,
    TrialResult,
    load_evaluators,
)
from tether_evals.evaluators.judge import parse_verdict

REGISTRY = load_evaluators(entry_points=False)
CASE = Case.model_validate(
    {"id": "c", "inputs": {"prompt": "p"}, "expected_output": "Paris", "expected": {}}
)


def score(kind: str, trial: TrialResult, case: Case = CASE, **settings: Any) -> Score:
    evaluator = REGISTRY.build(Check(type=kind, **settings))
    return asyncio.run(evaluator.evaluate(trial, case, EvalContext()))


def trial(**fields: Any) -> TrialResult:
    return TrialResult(case_id="c", **fields)


def calls(*names_and_args: tuple[str, dict[str, Any]]) -> list[ToolCallRecord]:
    return [ToolCallRecord(name=n, arguments=a) for n, a in names_and_args]


def test_text_checks() -> None:
    assert score("equals", trial(text="  Paris \n")).passed
    assert not score("equals", trial(text="paris")).passed
    assert score("equals", trial(text="paris"), ignore_case=True).passed
    partial = score("contains", trial(text="red and blue"), values=["red", "green"])
    assert (partial.value, partial.passed) == (0.5, False) and "'green'" in partial.reason
    assert score("regex", trial(text="order 1234 shipped"), pattern=r"\d{4}").passed
    assert not score("regex", trial(text="order 1234 shipped"), pattern=r"\d{4}", full=True).passed


def test_structured_checks() -> None:
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    assert score("valid_output", trial(text='{"n": 3}'), schema=schema).passed
    wrong = score("valid_output", trial(text='{"n": "3"}'), schema=schema)
    assert not wrong.passed and "at n" in wrong.reason
    assert not score("valid_output", trial(text="three")).passed
    assert score("valid_output", trial(output={"n": 1}, text="ignored")).passed
    fields = score(
        "fields",
        trial(output={"a": {"b": [1, {"c": "x"}]}, "d": 2}),
        fields={"a.b.1.c": "x", "d": 3, "missing": 1},
    )
    assert fields.value == pytest.approx(1 / 3) and not fields.passed
    assert fields.details["differ"]["d"] == {"expected": 3, "actual": 2}


def test_trajectory_checks_each_part() -> None:
    made = trial(
        tool_calls=calls(
            ("list_dir", {}), ("read_file", {"path": "x", "limit": 5}), ("write_file", {})
        )
    )
    good = score(
        "trajectory",
        made,
        called=[{"tool": "read_file", "arguments": {"path": "x"}}],
        never=["shell"],
        order=["list_dir", "write_file"],
        max_calls=3,
    )
    assert good.passed and good.value == 1.0
    bad = score(
        "trajectory",
        made,
        called=[{"tool": "read_file", "arguments": {"path": "y"}}],
        never=["write_file"],
        order=["write_file", "list_dir"],
        max_calls=2,
    )
    assert bad.value == 0.0 and not bad.passed
    for part in (
        "never called read_file",
        "forbidden tool(s): write_file",
        "order",
        "3 tool calls",
    ):
        assert part in bad.reason


def test_budget_checks() -> None:
    cheap = trial(input_tokens=100, output_tokens=20, cost=0.001, turns=2, duration=1.5)
    assert score("budget", cheap, max_tokens=120, max_cost=0.01, max_turns=2, max_seconds=2).passed
    over = score("budget", cheap, max_tokens=119, max_output_tokens=50)
    assert (over.value, over.passed) == (0.5, False) and "tokens 120 > 119" in over.reason
    unknown = score("budget", trial(cost=None), max_cost=1.0)
    assert not unknown.passed and "unknown" in unknown.reason


def test_event_checks_read_the_recorded_events() -> None:
    events = [
        {"type": "retry", "attempt": 1},
        {"type": "retry", "attempt": 2},
        {"type": "compaction"},
        {"type": "tool_end", "is_error": True},
    ]
    ran = trial(events=events, outcome="completed")
    assert score("events", ran, max_retries=2, min_compactions=1, outcome="completed").passed
    strict = score("events", ran, max_retries=1, max_tool_errors=0, outcome="limit")
    assert strict.value == 0.0 and strict.details["retries"] == 2
    assert "2 retries, more than 1" in strict.reason


def test_retrieval_reads_the_kb_search_results() -> None:
    result = "[1] doc-b:1-4 (score 0.9100)\ntext\n\n[2] doc-a:3-9 (score 0.5)\nmore\n[3] doc-b:9-12 (score 0.4)\n"
    searched = trial(tool_calls=[ToolCallRecord(name="kb_search", result=result)])
    found = score("retrieval", searched, relevant=["doc-a"], k=2)
    assert found.details["retrieved"] == ["doc-b", "doc-a"]
    assert found.value == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert found.details["recall@2"] == 1.0
    assert score("retrieval", searched, relevant=["doc-a"], k=1, metric="recall").value == 0.0


def test_judge_verdicts_are_parsed_from_json_in_any_wrapping() -> None:
    assert parse_verdict('{"reasoning": "ok", "score": 0.8}') == (0.8, "ok")
    assert parse_verdict('Sure!\n```json\n{"score": 2, "reasoning": "x"}\n```') == (1.0, "x")
    assert parse_verdict("I think it is good.") is None


def test_a_judge_whose_reply_holds_no_verdict_fails_and_keeps_the_reply() -> None:
    from tether.testing import Reply, ScriptedProvider

    judge = REGISTRY.build(Check(type="judge", rubric="Be right."))
    provider = ScriptedProvider([Reply(text="Looks fine to me.")])
    result = asyncio.run(
        judge.evaluate(trial(text="Paris"), CASE, EvalContext(models={"judge": provider}))
    )
    assert not result.passed and result.details["reply"] == "Looks fine to me."
    assert "## A reference answer\nParis" in result.details["prompt"]


def test_bad_settings_name_the_check() -> None:
    with pytest.raises(EvaluatorError, match='"strict-regex" \\(regex\\) has bad settings'):
        REGISTRY.build(Check(type="regex", name="strict-regex", pattern="("))
    with pytest.raises(EvaluatorError, match="max_cals"):
        REGISTRY.build(Check(type="trajectory", max_cals=3))


def test_an_unknown_evaluator_suggests_the_near_name() -> None:
    with pytest.raises(UnknownComponentError, match='Did you mean "contains"'):
        REGISTRY.get("contain")


class Polite:
    def __init__(self, word: str = "please") -> None:
        self.word = word

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        return Score.of(self.word in trial.text.lower(), f"says {self.word}")


def test_a_plugin_adds_an_evaluator_through_the_hook() -> None:
    plugin = SimpleNamespace(
        __name__="polite_plugin",
        register_evaluators=tether.hookimpl(lambda evaluators: evaluators.add("polite", Polite)),
    )
    registry = load_evaluators([plugin], entry_points=False)
    assert "polite" in registry and "contains" in registry
    polite = registry.build(Check(type="polite", word="thanks"))
    assert asyncio.run(polite.evaluate(trial(text="Thanks!"), CASE, EvalContext())).passed


def test_two_plugins_claiming_one_name_is_an_error_naming_both() -> None:
    def plugin(name: str) -> SimpleNamespace:
        hook = tether.hookimpl(lambda evaluators: evaluators.add("polite", Polite))
        return SimpleNamespace(__name__=name, register_evaluators=hook)

    registry = load_evaluators([plugin("one"), plugin("two")], entry_points=False)
    with pytest.raises(DuplicateComponentError, match="one and two"):
        registry.get("polite")


def test_a_broken_plugin_is_reported_and_the_others_still_load() -> None:
    def broken(evaluators: Any) -> None:
        raise RuntimeError("boom")

    bad = SimpleNamespace(__name__="bad", register_evaluators=tether.hookimpl(broken))
    registry = load_evaluators([bad], entry_points=False)
    assert "equals" in registry
    assert any("bad" in e and "boom" in e for e in registry.errors)
