"""``valid_output`` and ``fields``: checks of a structured answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsonschema
from pydantic import ConfigDict, Field, model_validator

from .base import EvalContext, Score, Settings, output_object

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["Fields", "ValidOutput"]

_MISSING = object()


class ValidOutput(Settings):
    """The answer is a JSON object (or the agent's validated ``output_type``) and, when
    ``schema`` is given, valid against that JSON Schema."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: dict[str, Any] | None = Field(default=None, alias="schema")

    @model_validator(mode="after")
    def _schema_is_valid(self) -> ValidOutput:
        if self.schema_ is not None:
            try:
                jsonschema.Draft202012Validator.check_schema(self.schema_)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"`schema` is not a valid JSON Schema: {exc.message}") from exc
        return self

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        value = output_object(trial.output if trial.output is not None else trial.text)
        if not isinstance(value, dict | list):
            return Score.of(False, "the answer is not JSON (or a structured output)")
        if self.schema_ is None:
            return Score.of(True, "the answer is JSON")
        errors = sorted(jsonschema.Draft202012Validator(self.schema_).iter_errors(value), key=str)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
            return Score.of(
                False, f"{len(errors)} schema error(s); first at {where}: {errors[0].message}"
            )
        return Score.of(True, "the answer matches the schema")


def _lookup(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


class Fields(Settings):
    """Fields of the structured answer equal the expected values. ``fields`` maps dotted
    paths (``address.city``, ``items.0.sku``) to values; default: the case's
    ``expected["fields"]``. The score is the share of equal fields."""

    fields: dict[str, Any] | None = None

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        wanted = self.fields if self.fields is not None else case.expected.get("fields")
        if not isinstance(wanted, dict) or not wanted:
            raise ValueError(
                f'the "fields" check of case {case.id!r} has no `fields` and the case no '
                "`expected.fields` mapping"
            )
        value = output_object(trial.output if trial.output is not None else trial.text)
        wrong = {}
        for path, expected in wanted.items():
            actual = _lookup(value, path)
            if actual is _MISSING or actual != expected:
                wrong[path] = {
                    "expected": expected,
                    "actual": None if actual is _MISSING else actual,
                }
        share = 1.0 - len(wrong) / len(wanted)
        if not wrong:
            return Score(share, True, f"all {len(wanted)} fields equal")
        names = ", ".join(sorted(wrong))
        return Score(share, False, f"fields differ: {names}", {"differ": wrong})
