from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from pydantic import BaseModel

import tether
from tether.errors import ToolError
from tether.messages import ImageBlock, TextBlock
from tether.testing import call_tool
from tether.tools import ToolContext


@tether.tool
async def forecast(city: str, days: int = 1, units: str = "metric") -> str:
    """Forecast for a city. Use for weather questions; not for climate history.

    Args:
        city: City name, e.g. "Lisbon".
        days: How many days ahead,
            from 1 to 7.

    Returns:
        A short forecast.
    """
    return f"{city}: sunny for {days} day(s) ({units})"


def test_schema_and_description_come_from_signature_and_docstring() -> None:
    assert forecast.name == "forecast"
    assert (
        forecast.description
        == "Forecast for a city. Use for weather questions; not for climate history."
    )
    assert forecast.parameters == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "description": 'City name, e.g. "Lisbon".'},
            "days": {
                "type": "integer",
                "default": 1,
                "description": "How many days ahead, from 1 to 7.",
            },
            "units": {"type": "string", "default": "metric"},
        },
        "required": ["city"],
    }


def test_context_parameter_is_hidden_from_the_model_and_filled_by_the_runner(
    tmp_path: Path,
) -> None:
    seen: dict[str, object] = {}

    @tether.tool
    def where(ctx: ToolContext, name: str) -> str:
        """Say where."""
        seen.update(cwd=ctx.cwd, key=ctx.idempotency_key, settings=dict(ctx.settings))
        return name

    assert "ctx" not in where.parameters["properties"]
    result = asyncio.run(call_tool(where, {"name": "x"}, cwd=tmp_path, settings={"root": "r"}))
    assert result.content == "x" and not result.is_error
    assert seen["cwd"] == tmp_path and seen["settings"] == {"root": "r"}
    assert isinstance(seen["key"], str) and len(seen["key"]) == 32


async def test_sync_tools_run_off_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()

    @tether.tool
    def which_thread() -> int:
        """Report the thread."""
        return threading.get_ident()

    result = await call_tool(which_thread, {})
    assert int(result.text) != loop_thread


async def test_invalid_arguments_tell_the_model_what_was_wrong_and_the_schema() -> None:
    result = await call_tool(forecast, {"days": "many", "colour": "red"})
    assert result.is_error
    text = result.text
    assert "Invalid arguments for tool `forecast`" in text
    assert "- city: Field required" in text
    assert "- days: Input should be a valid integer" in text and '"many"' in text
    assert "- colour: Extra inputs are not permitted" in text
    assert '"required": ["city"]' in text


async def test_arguments_that_are_not_json_are_reported_with_the_schema() -> None:
    result = await call_tool(forecast, '{"city": "Lis')
    assert result.is_error
    assert "not a valid JSON object" in result.text and '{"city": "Lis' in result.text
    assert '"properties"' in result.text


async def test_timeout_stops_the_tool_and_says_so() -> None:
    finished = asyncio.Event()

    @tether.tool(timeout=0.05)
    async def slow() -> str:
        """Slow."""
        await asyncio.Event().wait()
        finished.set()
        return "never"

    result = await call_tool(slow, {})
    assert result.is_error and "timed out after 0.05 s" in result.text
    assert not finished.is_set()


async def test_tool_error_text_reaches_the_model_verbatim_and_other_exceptions_are_named() -> None:
    @tether.tool
    def picky(x: int) -> str:
        """Picky."""
        if x == 0:
            raise ToolError("x must be positive; try x=1")
        raise KeyError("boom")

    assert (await call_tool(picky, {"x": 0})).text == "x must be positive; try x=1"
    other = await call_tool(picky, {"x": 2})
    assert other.is_error and other.text == "Tool `picky` failed: KeyError: 'boom'"


async def test_output_cap_keeps_head_and_tail_with_a_visible_marker() -> None:
    @tether.tool(max_output_chars=300)
    def flood() -> str:
        """Flood."""
        return "HEAD" + "x" * 10_000 + "TAIL"

    text = (await call_tool(flood, {})).text
    assert text.startswith("HEAD") and text.endswith("TAIL")
    assert "characters omitted: output exceeded 300 characters" in text
    assert len(text) < 450


async def test_structured_results_are_serialised_and_images_kept() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tether.tool
    def point() -> Point:
        """A point."""
        return Point(x=1, y=2)

    @tether.tool
    def picture() -> list[TextBlock | ImageBlock]:
        """A picture."""
        return [TextBlock(text="a cat"), ImageBlock(data="iVBORw0KGgo=", mime_type="image/png")]

    assert (await call_tool(point, {})).text == '{"x":1,"y":2}'
    content = (await call_tool(picture, {})).content
    assert isinstance(content, list) and isinstance(content[1], ImageBlock)


def test_invalid_tool_names_and_var_args_are_rejected_at_definition() -> None:
    with pytest.raises(ValueError, match="not valid"):
        tether.tool(name="has space")(lambda: None)

    def varargs(*items: int) -> int:
        return 0

    with pytest.raises(TypeError, match="named, typed parameters"):
        tether.tool(varargs)
