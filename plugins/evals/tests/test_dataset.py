"""Datasets: YAML, JSON and JSONL files, clear errors, and the shipped JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tether_evals import Case, Dataset, DatasetError, dataset_schema, load_dataset
from tether_evals.dataset import SCHEMA_FILE

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evals" / "support.yaml"


def test_the_shipped_schema_is_the_current_one_and_validates_the_example() -> None:
    shipped = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert shipped == dataset_schema()
    jsonschema.validate(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")), shipped)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"cases": [{"id": "x", "inputs": {}}]}, shipped)


def test_a_yaml_dataset_keeps_inputs_expectations_metadata_and_tags() -> None:
    dataset = load_dataset(EXAMPLE)
    notes = next(c for c in dataset.cases if c.id == "notes")
    assert notes.inputs.files["NOTES.md"].startswith("Never deploy on Fridays.")
    assert notes.tags == ["tools"]
    greeting = next(c for c in dataset.cases if c.id == "greeting")
    assert [m.role for m in greeting.inputs.history] == ["user", "assistant"]
    assert next(c for c in dataset.cases if c.id == "refunds").metadata == {"source": "policies"}
    assert dataset.base_dir == EXAMPLE.parent
    assert [c.id for c in dataset.select(tags=["text"]).cases] == ["capital", "greeting"]
    assert [c.id for c in dataset.select(ids=["invoice"]).cases] == ["invoice"]
    assert [c.type for c in dataset.checks_for(notes)] == ["budget", "contains", "trajectory"]


def test_a_jsonl_dataset_is_one_case_per_line_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "smoke.jsonl"
    lines = [
        {"id": "a", "inputs": {"prompt": "hi"}, "expected_output": "hello"},
        {"id": "b", "inputs": {"prompt": "bye"}, "evaluators": [{"type": "regex", "pattern": "b"}]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    dataset = load_dataset(path)
    assert dataset.name == "smoke" and [c.id for c in dataset.cases] == ["a", "b"]
    assert dataset.cases[1].evaluators[0].settings == {"pattern": "b"}


def test_a_bad_jsonl_line_is_named_with_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "inputs": {"prompt": "hi"}}\n{"id": "b", "inputs": {}}\n')
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert "line 2" in message and "inputs.prompt" in message and "tether eval schema" in message


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "dup.yaml",
            "cases: [{id: a, inputs: {prompt: x}}, {id: a, inputs: {prompt: y}}]",
            "unique",
        ),
        ("typo.yaml", "cases: [{id: a, inputs: {prompt: x}, tgas: [x]}]", "cases.0.tgas"),
        ("list.yaml", "- a\n- b\n", "one dataset object"),
        ("broken.yaml", "cases: [", "not valid YAML"),
        ("cases.csv", "id,prompt\n", "use .yaml, .yml, .json or .jsonl"),
        ("missing.yaml", None, "Cannot read the dataset"),
    ],
)
def test_bad_dataset_files_get_errors_that_say_what_to_fix(
    tmp_path: Path, name: str, text: str | None, expected: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(DatasetError, match=expected):
        load_dataset(path)


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_cases = st.lists(
    st.builds(
        lambda i, prompt, tags, expected: Case.model_validate(
            {"id": f"c{i}", "inputs": {"prompt": prompt or "p"}, "tags": tags,
             "expected_output": expected}
        ),
        st.integers(0, 10_000),
        _text,
        st.lists(_text, max_size=3),
        st.none() | _text,
    ),
    max_size=5,
    unique_by=lambda c: c.id,
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(_cases)
def test_any_dataset_survives_a_round_trip_through_jsonl_and_yaml(cases: list[Case]) -> None:
    import tempfile

    dataset = Dataset(name="round", cases=cases)
    with tempfile.TemporaryDirectory() as directory:
        jsonl = Path(directory) / "round.jsonl"
        jsonl.write_text("".join(c.model_dump_json() + "\n" for c in cases), encoding="utf-8")
        assert load_dataset(jsonl).cases == dataset.cases
        as_yaml = Path(directory) / "round.yaml"
        as_yaml.write_text(yaml.safe_dump(dataset.model_dump(mode="json")), encoding="utf-8")
        assert load_dataset(as_yaml).cases == dataset.cases
