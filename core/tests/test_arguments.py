"""Strict parsing of tool arguments: what a lenient JSON parse would let through is refused
with a message for the model, and nothing but ``InvalidToolArguments`` ever escapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tether
from tether.arguments import (
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENT_DEPTH,
    check_argument_types,
    parse_tool_arguments,
    split_tool_arguments,
)
from tether.config import Config
from tether.errors import InvalidToolArguments
from tether.messages import ToolCallBlock
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant


def refusal(text: str | bytes) -> str:
    with pytest.raises(InvalidToolArguments) as info:
        parse_tool_arguments(text)
    return str(info.value)


def test_a_plain_object_and_blank_text_parse() -> None:
    assert parse_tool_arguments('{"a": 1, "b": [true, null, "x"]}') == {
        "a": 1,
        "b": [True, None, "x"],
    }
    assert parse_tool_arguments("  ") == {}
    assert parse_tool_arguments(b'{"city": "Lisboa \xc3\xa9"}') == {"city": "Lisboa é"}


def test_duplicate_keys_are_refused_at_any_depth() -> None:
    assert '"path"' in refusal('{"path": "a.txt", "path": "/etc/passwd"}')
    assert '"k"' in refusal('{"outer": {"k": 1, "k": 2}}')


def test_deep_nesting_is_refused_without_recursion_error() -> None:
    message = refusal("[" * 100_000 + "]" * 100_000)
    assert "nest deeper" in message
    assert "nest deeper" in refusal(
        '{"a": ' + "[" * (MAX_ARGUMENT_DEPTH + 1) + "]" * (MAX_ARGUMENT_DEPTH + 1) + "}"
    )
    ok = '{"a": ' + "[" * (MAX_ARGUMENT_DEPTH - 1) + "]" * (MAX_ARGUMENT_DEPTH - 1) + "}"
    assert parse_tool_arguments(ok)


def test_over_long_text_is_refused_before_parsing() -> None:
    huge = '{"data": "' + "x" * MAX_ARGUMENT_CHARS + '"}'
    message = refusal(huge)
    assert "characters long" in message and str(MAX_ARGUMENT_CHARS) in message
    arguments, raw = split_tool_arguments(huge)
    assert arguments == {} and raw is not None and len(raw) == MAX_ARGUMENT_CHARS + 1
    assert "characters long" in refusal(raw)


def test_nul_characters_and_lone_surrogates_are_refused() -> None:
    assert "NUL" in refusal('{"path": "a\\u0000b"}')
    assert "NUL" in refusal('{"a\\u0000": 1}')
    assert "UTF-8" in refusal('{"name": "\\ud800"}')
    assert "UTF-8" in refusal(b'{"name": "\xff"}')


def test_non_finite_numbers_and_non_objects_are_refused() -> None:
    assert "NaN" in refusal('{"x": NaN}')
    assert "an array" in refusal("[1, 2]")
    assert "not valid JSON" in refusal('{"a": ')


def test_an_object_inside_a_json_string_is_decoded_once() -> None:
    assert parse_tool_arguments(json.dumps('{"a": 1}')) == {"a": 1}
    twice = json.dumps(json.dumps('{"a": 1}'))
    assert "a string" in refusal(twice)


def test_a_boolean_where_an_integer_is_declared_is_refused() -> None:
    @tether.tool
    def repeat(
        text: str, times: int, ratio: float | None = None, flags: list[int] | None = None
    ) -> str:
        """Repeat."""
        return text * times

    with pytest.raises(InvalidToolArguments, match="times is true"):
        check_argument_types(repeat.parameters, {"text": "a", "times": True})
    with pytest.raises(InvalidToolArguments, match="ratio is false"):
        check_argument_types(repeat.parameters, {"text": "a", "times": 1, "ratio": False})
    with pytest.raises(InvalidToolArguments, match=r"flags\[1\]"):
        check_argument_types(repeat.parameters, {"text": "a", "times": 1, "flags": [1, True]})
    check_argument_types(repeat.parameters, {"text": "a", "times": 2, "ratio": 0.5})


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_raise_an_untyped_exception(data: bytes) -> None:
    try:
        value = parse_tool_arguments(data)
    except InvalidToolArguments:
        return
    assert isinstance(value, dict)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # whatever passes is sendable


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=512) | _json_values.map(lambda v: json.dumps(v, allow_nan=True)))
def test_arbitrary_text_never_raises_an_untyped_exception(text: str) -> None:
    try:
        value = parse_tool_arguments(text)
    except InvalidToolArguments:
        return
    assert isinstance(value, dict)
    assert split_tool_arguments(text) == (value, None)


@tether.tool
def write_note(path: str, count: int = 1) -> str:
    """Write a note."""
    return f"wrote {path} x{count}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"path": "a.txt", "path": "/etc/passwd"}', "repeat the key"),
        ('{"path": ' + "[" * 5000 + "]" * 5000 + "}", "nest deeper"),
        ('{"path": "a\\u0000.txt"}', "NUL"),
        ('{"path": "a.txt", "count": true}', "count is true"),
    ],
)
async def test_the_model_gets_a_structured_error_and_the_tool_does_not_run(
    raw: str, expected: str
) -> None:
    arguments, raw_arguments = split_tool_arguments(raw)
    bad: Any = ToolCallBlock(
        id="c1", name="write_note", arguments=arguments, raw_arguments=raw_arguments
    )
    provider = ScriptedProvider([Reply(tool_calls=[bad]), Reply(text="ok")])
    session = InMemorySession()
    agent = tether.Agent(provider, tools=[write_note], config=Config())
    result = await agent.run("write", session=session)
    assert result.outcome is tether.Outcome.COMPLETED
    answer = session.messages[2].tool_results[0]
    assert answer.is_error and expected in answer.text and "wrote" not in answer.text
    assert '"path"' in answer.text  # the schema to follow is included
    assert_invariant(session.messages)
