"""Model JSON nested absurdly deep — a structured answer, final-answer arguments, tool
arguments, as text or already decoded by an SDK — ends in a typed error the run handles
(a correction request, then ``OutputValidationError``; an error result for a tool call),
never a ``RecursionError`` or a session that cannot be written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import tether
from tether.arguments import MAX_ARGUMENT_DEPTH, nests_deeper
from tether.errors import OutputValidationError
from tether.messages import ToolCallBlock
from tether.output import MAX_OUTPUT_DEPTH
from tether.provider import ModelCapabilities
from tether.testing import Reply, ScriptedProvider


class Answer(BaseModel):
    value: Any


def nested_text(depth: int, kind: str) -> str:
    opener, closer = ("[", "]") if kind == "array" else ('{"a":', "}")
    return opener * depth + "1" + closer * depth


def nested_value(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


depths = st.one_of(st.integers(MAX_OUTPUT_DEPTH + 1, 3_000), st.sampled_from([10_000, 100_000]))
kinds = st.sampled_from(["array", "object"])
NATIVE = ModelCapabilities(structured_output=True)


@given(depths, kinds)
@settings(max_examples=15, deadline=None)
async def test_a_deep_structured_answer_is_sent_back_then_a_good_one_completes(
    depth: int, kind: str
) -> None:
    deep = '{"value": ' + nested_text(depth, kind) + "}"
    model = ScriptedProvider(
        [Reply(text=deep, chunk=len(deep)), Reply(text='{"value": 7}')], capabilities=NATIVE
    )
    result = await tether.Agent(model, output_type=Answer).run("answer")
    assert result.outcome.value == "completed", result.error
    assert result.output == Answer(value=7)
    correction = model.requests[1].messages[-1].text
    assert f"deeper than {MAX_OUTPUT_DEPTH} levels" in correction


async def test_deep_answers_every_time_end_the_run_with_output_validation_error() -> None:
    deep = '{"value": ' + nested_text(100_000, "array") + "}"
    model = ScriptedProvider([Reply(text=deep, chunk=len(deep))] * 3, capabilities=NATIVE)
    result = await tether.Agent(model, output_type=Answer, output_retries=2).run("answer")
    assert result.outcome.value == "invalid_output"
    assert isinstance(result.error, OutputValidationError)
    assert f"deeper than {MAX_OUTPUT_DEPTH} levels" in str(result.error)


async def test_deep_final_answer_arguments_as_text_or_decoded_are_refused(tmp_path: Path) -> None:
    raw = '{"value": ' + nested_text(100_000, "object") + "}"
    model = ScriptedProvider(
        [
            Reply(tool_calls=[ToolCallBlock(id="c1", name="final_result", raw_arguments=raw)]),
            Reply(
                tool_calls=[
                    ToolCallBlock(
                        id="c2", name="final_result", arguments={"value": nested_value(100_000)}
                    )
                ]
            ),
            Reply(tool_calls=[ToolCallBlock(id="c3", name="final_result", arguments={"value": 3})]),
        ]
    )
    session = tether.JsonlSession(tmp_path / "s.jsonl")
    result = await tether.Agent(model, output_type=Answer).run("answer", session=session)
    assert result.outcome.value == "completed", result.error
    assert result.output == Answer(value=3)
    refusals = [r for m in result.messages if m.role == "tool" for r in m.tool_results][:2]
    assert all(r.is_error and "deeper than" in r.text for r in refusals)


@tether.tool
def store(data: dict[str, Any]) -> str:
    """Store data."""
    return "stored"


async def test_deep_tool_arguments_as_text_or_decoded_get_an_error_result(tmp_path: Path) -> None:
    raw = '{"data": ' + nested_text(10_000, "object") + "}"
    model = ScriptedProvider(
        [
            Reply(
                tool_calls=[
                    ToolCallBlock(id="c1", name="store", raw_arguments=raw),
                    ToolCallBlock(id="c2", name="store", arguments={"data": nested_value(100_000)}),
                ]
            ),
            Reply(text="done"),
        ]
    )
    session = tether.JsonlSession(tmp_path / "s.jsonl")
    result = await tether.Agent(model, tools=[store]).run("go", session=session)
    assert result.outcome.value == "completed", result.error
    results = [r for m in result.messages if m.role == "tool" for r in m.tool_results]
    assert [r.is_error for r in results] == [True, True]
    assert all(f"deeper than {MAX_ARGUMENT_DEPTH} levels" in r.text for r in results)
    reopened = tether.JsonlSession(tmp_path / "s.jsonl", read_only=True)  # it reads back
    assert len(reopened.messages) == len(session.messages)


def test_the_limit_is_exact() -> None:
    assert not nests_deeper(nested_value(MAX_ARGUMENT_DEPTH), MAX_ARGUMENT_DEPTH)
    assert nests_deeper(nested_value(MAX_ARGUMENT_DEPTH + 1), MAX_ARGUMENT_DEPTH)
    assert nests_deeper(nested_value(1_000_000), MAX_ARGUMENT_DEPTH)
