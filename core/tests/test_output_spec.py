"""OutputSpec: schemas a provider can take, and validation errors a model can act on."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from tether.errors import ConfigError, OutputValidationError
from tether.output import OutputSpec


class City(BaseModel):
    name: str
    population: int


class Weather(BaseModel):
    """A forecast."""

    city: str
    kind: Literal["sun", "rain"]
    note: str | None = None


def test_object_schema_is_used_as_is_and_strict_when_every_field_is_required() -> None:
    spec = OutputSpec(City)
    assert not spec.wrapped
    assert spec.schema["properties"].keys() == {"name", "population"}
    assert spec.strict and spec.strict_schema["additionalProperties"] is False
    assert spec.validate_text('{"name": "Lisbon", "population": 545000}') == City(
        name="Lisbon", population=545000
    )


def test_optional_fields_turn_strict_mode_off_and_description_comes_from_the_model() -> None:
    spec = OutputSpec(Weather)
    assert not spec.strict
    assert spec.native_schema().description == "A forecast."


def test_lists_and_unions_are_wrapped_in_an_object() -> None:
    spec = OutputSpec(list[City])
    assert spec.wrapped and spec.schema["required"] == ["result"]
    assert "$defs" in spec.schema  # nested model references still resolve from the root
    value = spec.validate_text('{"result": [{"name": "Porto", "population": 232000}]}')
    assert value == [City(name="Porto", population=232000)]
    union = OutputSpec(City | int)
    assert union.validate_arguments({"result": 3}) == 3


def test_invalid_answers_list_each_problem_for_the_model() -> None:
    spec = OutputSpec(City)
    with pytest.raises(OutputValidationError) as info:
        spec.validate_text('{"name": "Lisbon", "population": "many"}')
    assert info.value.errors == [
        "population: Input should be a valid integer, unable to parse string as an integer"
    ]
    assert "Required schema" in str(info.value)
    with pytest.raises(OutputValidationError, match="not valid JSON"):
        spec.validate_text("Lisbon has 545000 people")


def test_a_fenced_answer_is_accepted_and_partial_json_is_readable() -> None:
    spec = OutputSpec(City)
    assert spec.validate_text('```json\n{"name": "Faro", "population": 1}\n```').name == "Faro"
    assert spec.partial('{"name": "Fa') == {"name": "Fa"}
    assert OutputSpec(list[int]).partial('{"result": [1, 2') == [1, 2]


def test_an_unusable_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot be described as JSON schema"):
        OutputSpec(object())


def test_a_json_schema_output_validates_with_jsonschema_and_keeps_plain_data() -> None:
    from tether.output import JsonSchemaOutput

    spec = JsonSchemaOutput({"type": "array", "items": {"type": "integer"}})
    assert spec.wrapped and spec.validate_text('{"result": [1, 2]}') == [1, 2]
    with pytest.raises(OutputValidationError) as info:
        spec.validate_arguments({"result": [1, "two"]})
    assert info.value.errors == ["1: 'two' is not of type 'integer'"]
    with pytest.raises(ConfigError, match="not a valid JSON schema"):
        JsonSchemaOutput({"type": 5})
