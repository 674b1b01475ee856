"""Structured output: the type a run must return, its JSON schema, and its validation.

``Agent(output_type=Invoice)`` (a pydantic model, a dataclass, ``list[...]``, a union, a
primitive) makes ``RunResult.output`` a validated ``Invoice``. How the model is asked for
it depends on the model's capabilities (data, never the provider's name):

- ``structured_output`` models get the schema as the provider's native JSON-schema
  output (:class:`~tether.provider.OutputSchema` on the request) and answer with JSON text;
- the others get a final-answer tool whose arguments are the schema, and answer by
  calling it.

Either way the answer is validated here; a failure is sent back to the model with the
errors (up to ``retries`` times), then the run ends with
:class:`~tether.errors.OutputValidationError`.

Schemas whose root is not an object (lists, unions, primitives) are wrapped in
``{"result": ...}``: tool arguments and most native JSON modes require an object root.

An answer is untrusted input: one nesting arrays or objects deeper than
:data:`MAX_OUTPUT_DEPTH` levels is refused with an :class:`OutputValidationError` (sent
back for correction like any invalid answer), never parsed into a ``RecursionError``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
import pydantic_core

from .arguments import nests_deeper
from .errors import ConfigError, OutputValidationError
from .messages import Message, ToolCallBlock, ToolResultBlock
from .provider import OutputSchema, ToolDefinition

__all__ = [
    "FINAL_TOOL",
    "MAX_OUTPUT_DEPTH",
    "JsonSchemaOutput",
    "OutputRun",
    "OutputSpec",
    "OutputStep",
]

FINAL_TOOL = "final_result"
"""Name of the final-answer tool offered to models without native schema output."""

MAX_OUTPUT_DEPTH = 64
"""Deepest nesting of arrays and objects a structured answer may have."""

_WRAP_KEY = "result"


class OutputSpec:
    """An output type, its schema and how to validate answers against it.

    :param output_type: anything pydantic can validate and describe as JSON schema.
    :param retries: how many invalid answers are sent back for correction before the run
        fails with :class:`~tether.errors.OutputValidationError`.
    :param name: the schema's name (native output) and the final-answer tool's name.
    :param description: what the answer is, shown to the model.
    """

    def __init__(
        self,
        output_type: Any,
        *,
        retries: int = 2,
        name: str = FINAL_TOOL,
        description: str | None = None,
    ) -> None:
        if retries < 0:
            raise ConfigError(f"output_retries must be 0 or more, got {retries}.")
        self.output_type = output_type
        self.retries = retries
        self.name = name
        try:
            self.adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
            inner = self.adapter.json_schema()
        except (pydantic.PydanticUserError, pydantic_core.SchemaError, TypeError) as exc:
            raise ConfigError(
                f"output_type {output_type!r} cannot be described as JSON schema: {exc}. "
                "Use a pydantic model, a dataclass, a TypedDict, list[...] or a union of them."
            ) from exc
        self.wrapped = inner.get("type") != "object" or "properties" not in inner
        schema = _wrap(inner) if self.wrapped else inner
        self.schema: dict[str, Any] = schema
        self.description = description or (
            str(inner.get("description"))
            if inner.get("description")
            else "The final answer. Call this once, when the task is done, with the complete answer."
        )
        strict = _strict_schema(schema)
        self.strict = strict is not None
        self.strict_schema: dict[str, Any] = strict if strict is not None else _closed(schema)
        """What native output sends: every object closed (``additionalProperties: false``)."""

    # -- how the model is asked -------------------------------------------------------------
    def native_schema(self) -> OutputSchema:
        """The schema for a provider's native JSON-schema output."""
        return OutputSchema(
            name=self.name,
            schema=self.strict_schema,
            strict=self.strict,
            description=self.description,
        )

    def tool_definition(self) -> ToolDefinition:
        """The final-answer tool for models without native schema output."""
        return ToolDefinition(self.name, self.description, self.schema)

    # -- validation ---------------------------------------------------------------------------
    def validate_text(self, text: str) -> Any:
        """The validated value of a JSON answer, or :class:`OutputValidationError`."""
        stripped = _strip_fence(text)
        try:
            raw = json.loads(stripped)
        except RecursionError:
            raise _too_deep() from None
        except ValueError as exc:
            raise OutputValidationError(
                f"The answer is not valid JSON ({exc}). Answer with only a JSON value "
                f"matching this schema: {json.dumps(self.schema)}",
                errors=[f"not JSON: {exc}"],
            ) from None
        return self.validate_arguments(raw)

    def validate_arguments(self, raw: Any) -> Any:
        """The validated value of a decoded answer (final-answer tool arguments, or the
        parsed JSON text), or :class:`OutputValidationError` listing each problem."""
        if nests_deeper(raw, MAX_OUTPUT_DEPTH):
            raise _too_deep()
        if self.wrapped:
            if not isinstance(raw, Mapping) or _WRAP_KEY not in raw:
                raise OutputValidationError(
                    f'The answer must be a JSON object {{"{_WRAP_KEY}": ...}} matching this '
                    f"schema: {json.dumps(self.schema)}",
                    errors=[f"missing '{_WRAP_KEY}'"],
                )
            raw = raw[_WRAP_KEY]
        try:
            return self.adapter.validate_python(raw)
        except pydantic.ValidationError as exc:
            problems = []
            for item in exc.errors(include_url=False):
                where = ".".join(str(p) for p in item["loc"]) or "(root)"
                problems.append(f"{where}: {item['msg']}")
            raise OutputValidationError(
                "The answer does not match the required schema:\n- "
                + "\n- ".join(problems)
                + f"\nRequired schema: {json.dumps(self.schema)}",
                errors=problems,
            ) from None

    def partial(self, text: str) -> Any:
        """The JSON value parsed so far from a streamed answer (unwrapped), or ``None``.

        Incomplete strings, lists and objects are kept as far as they arrived; the value
        is not validated (required fields may still be missing).
        """
        stripped = _strip_fence(text, partial=True)
        if not stripped:
            return None
        try:
            value = pydantic_core.from_json(stripped, allow_partial="trailing-strings")
        except ValueError:
            return None
        if self.wrapped:
            return value.get(_WRAP_KEY) if isinstance(value, dict) else None
        return value

    def dump(self, value: Any) -> Any:
        """``value`` as plain JSON data (for printing and for storing in history)."""
        return self.adapter.dump_python(value, mode="json")

    def retry_prompt(self, error: OutputValidationError) -> str:
        """The user message that sends an invalid native answer back for correction."""
        return f"{error}\nAnswer again with only the corrected JSON."

    def missing_tool_prompt(self) -> str:
        """The user message for a tool-mode model that answered without the final tool."""
        return (
            f"Give your final answer by calling the `{self.name}` tool with arguments "
            f"matching its schema: {json.dumps(self.schema)}"
        )


class JsonSchemaOutput(OutputSpec):
    """Structured output described by a JSON schema instead of a Python type (``tether
    run --schema FILE``). Answers are validated with ``jsonschema``; the output is plain
    JSON data.

    Raises :class:`~tether.errors.ConfigError` for a schema that is not a valid JSON
    schema.
    """

    def __init__(
        self, schema: Mapping[str, Any], *, retries: int = 2, name: str = FINAL_TOOL
    ) -> None:
        import jsonschema

        inner = dict(schema)
        try:
            jsonschema.validators.validator_for(inner).check_schema(inner)
        except jsonschema.SchemaError as exc:
            raise ConfigError(
                f"The output schema is not a valid JSON schema: {exc.message}."
            ) from None
        if retries < 0:
            raise ConfigError(f"output_retries must be 0 or more, got {retries}.")
        self.output_type = dict
        self.retries = retries
        self.name = name
        self._validator = jsonschema.validators.validator_for(inner)(inner)
        self.wrapped = inner.get("type") != "object" or "properties" not in inner
        self.schema = _wrap(inner) if self.wrapped else inner
        self.description = str(
            inner.get("description") or "The final answer, as JSON matching the schema."
        )
        strict = _strict_schema(self.schema)
        self.strict = strict is not None
        self.strict_schema = strict if strict is not None else _closed(self.schema)

    def validate_arguments(self, raw: Any) -> Any:
        if self.wrapped:
            if not isinstance(raw, Mapping) or _WRAP_KEY not in raw:
                raise OutputValidationError(
                    f'The answer must be a JSON object {{"{_WRAP_KEY}": ...}} matching this '
                    f"schema: {json.dumps(self.schema)}",
                    errors=[f"missing '{_WRAP_KEY}'"],
                )
            raw = raw[_WRAP_KEY]
        problems = [
            f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in self._validator.iter_errors(raw)
        ]
        if problems:
            raise OutputValidationError(
                "The answer does not match the required schema:\n- "
                + "\n- ".join(problems)
                + f"\nRequired schema: {json.dumps(self.schema)}",
                errors=problems,
            )
        return raw

    def dump(self, value: Any) -> Any:
        return value


def _too_deep() -> OutputValidationError:
    return OutputValidationError(
        f"The answer nests arrays or objects deeper than {MAX_OUTPUT_DEPTH} levels. Answer "
        "with a flatter JSON value matching the schema.",
        errors=[f"nested deeper than {MAX_OUTPUT_DEPTH} levels"],
    )


def _reject_raw(raw_arguments: str) -> None:
    """Final-answer arguments the provider could not decode: say why, as a validation
    error (the depth limit and the other argument rules of :mod:`tether.arguments`)."""
    from .arguments import parse_tool_arguments
    from .errors import InvalidToolArguments

    try:
        parse_tool_arguments(raw_arguments)
    except InvalidToolArguments as exc:
        raise OutputValidationError(str(exc), errors=[str(exc)]) from None


def _wrap(inner: dict[str, Any]) -> dict[str, Any]:
    inner = dict(inner)
    defs = inner.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {_WRAP_KEY: inner},
        "required": [_WRAP_KEY],
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A copy meeting strict-mode rules (every object closed, every property required),
    or ``None`` when the schema has optional properties or open objects that strict mode
    cannot express."""
    result = copy.deepcopy(schema)

    def visit(node: Any) -> bool:
        if isinstance(node, list):
            return all(visit(item) for item in node)
        if not isinstance(node, dict):
            return True
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties", {})
            if set(node.get("required", [])) != set(properties):
                return False
            extra = node.get("additionalProperties")
            if extra not in (None, False):
                return False
            node["additionalProperties"] = False
        return all(visit(value) for key, value in node.items() if key != "default")

    return result if visit(result) else None


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy with ``additionalProperties: false`` on every object that does not say."""
    result = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            if "properties" in node:
                node.setdefault("additionalProperties", False)
            for key, value in node.items():
                if key != "default":
                    visit(value)

    visit(result)
    return result


def _strip_fence(text: str, *, partial: bool = False) -> str:
    """The text without a surrounding Markdown code fence, which some models add."""
    stripped = text.strip()
    if stripped.startswith("```"):
        newline = stripped.find("\n")
        stripped = stripped[newline + 1 :] if newline != -1 else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
        elif not partial:
            return stripped
    return stripped.strip()


@dataclass(slots=True)
class OutputStep:
    """What the runner does after a response, for structured output.

    ``results`` answer the response's tool calls (tool mode), ``followup`` is a user
    message asking for a correction; ``finished`` means ``value`` is the run's output;
    ``error`` ends the run (after ``results`` are written, so the invariant holds).
    """

    finished: bool = False
    value: Any = None
    results: list[ToolResultBlock] | None = None
    followup: Message | None = None
    error: OutputValidationError | None = None


class OutputRun:
    """Structured output over one run: what to request, and each response's review."""

    def __init__(self, spec: OutputSpec, *, native: bool) -> None:
        self.spec = spec
        self.native = native
        self.failures = 0
        self._text: list[str] = []
        self._last_partial: Any = None

    def tools(self, definitions: Sequence[ToolDefinition]) -> Sequence[ToolDefinition]:
        if self.native:
            return definitions
        return (*definitions, self.spec.tool_definition())

    def schema(self) -> OutputSchema | None:
        return self.spec.native_schema() if self.native else None

    def started(self) -> None:
        """A model call (or a retry of one) starts: forget the partial answer."""
        self._text.clear()
        self._last_partial = None

    def delta(self, text: str) -> Any:
        """Feed a text delta; the partial value when it changed (native mode), else None."""
        if not self.native:
            return None
        self._text.append(text)
        value = self.spec.partial("".join(self._text))
        if value is None or value == self._last_partial:
            return None
        self._last_partial = value
        return value

    def review(self, message: Message) -> OutputStep | None:
        """Decide what a finished response means; ``None``: carry on with its tool calls."""
        calls = message.tool_calls
        finals = [c for c in calls if c.name == self.spec.name] if not self.native else []
        if finals:
            return self._review_final(calls, finals[0])
        if calls:
            return None
        try:
            return OutputStep(finished=True, value=self.spec.validate_text(message.text))
        except OutputValidationError as exc:
            prompt = self.spec.retry_prompt(exc) if self.native else self.spec.missing_tool_prompt()
            return self._failed(exc, followup=Message.user(prompt))

    def _review_final(self, calls: list[ToolCallBlock], final: ToolCallBlock) -> OutputStep:
        def others(why: str) -> list[ToolResultBlock]:
            return [
                ToolResultBlock(call_id=c.id, content=why, is_error=True)
                if c is not final
                else ToolResultBlock(call_id=c.id, content="")
                for c in calls
            ]

        try:
            if final.raw_arguments is not None:
                _reject_raw(final.raw_arguments)
            value = self.spec.validate_arguments(final.arguments)
        except OutputValidationError as exc:
            results = others("Not run: the final answer in the same response was invalid.")
            index = calls.index(final)
            results[index] = ToolResultBlock(call_id=final.id, content=str(exc), is_error=True)
            return self._failed(exc, results=results)
        results = others("Not run: the final answer ended the run.")
        results[calls.index(final)] = ToolResultBlock(
            call_id=final.id, content="Final answer received."
        )
        return OutputStep(finished=True, value=value, results=results)

    def _failed(
        self,
        error: OutputValidationError,
        *,
        results: list[ToolResultBlock] | None = None,
        followup: Message | None = None,
    ) -> OutputStep:
        self.failures += 1
        if self.failures > self.spec.retries:
            final = OutputValidationError(
                f"The answer did not match the output type after {self.failures} attempt(s). "
                f"Last problem: {error}",
                errors=error.errors,
            )
            return OutputStep(results=results, error=final)
        return OutputStep(results=results, followup=followup)
