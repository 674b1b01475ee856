"""Structured output through the one loop: native JSON and the final-answer tool,
partial values while streaming, corrections, and the typed failure after the retries."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import tether
from tether.config import Config
from tether.errors import OutputValidationError
from tether.events import Done, PartialOutput, ToolEnd
from tether.messages import Message
from tether.provider import ModelCapabilities
from tether.result import Outcome
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

NATIVE = ModelCapabilities(structured_output=True)
TOOL_MODE = ModelCapabilities(structured_output=False)


class Invoice(BaseModel):
    customer: str
    total: float
    lines: list[str]


INVOICE = {"customer": "ACME", "total": 12.5, "lines": ["bolts", "nuts"]}


@tether.tool
def lookup(customer: str) -> str:
    """Look a customer up."""
    return f"{customer}: 2 open orders"


def agent(provider: ScriptedProvider, **kwargs: object) -> tether.Agent:
    return tether.Agent(provider, tools=[lookup], config=Config(), output_type=Invoice, **kwargs)  # type: ignore[arg-type]


async def test_native_output_streams_partial_values_and_ends_validated() -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("lookup", customer="ACME")]),
            Reply(text=json.dumps(INVOICE), chunk=9),
        ],
        capabilities=NATIVE,
    )
    events = [e async for e in agent(provider).stream("Invoice ACME")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.COMPLETED
    assert result.output == Invoice(**INVOICE)
    assert result.text == json.dumps(INVOICE)
    partials = [e.value for e in events if isinstance(e, PartialOutput)]
    assert len(partials) >= 3 and partials[-1] == INVOICE
    assert any(p.get("customer") == "ACME" and "lines" not in p for p in partials)
    # the schema went out natively, and no final-answer tool was offered
    request = provider.requests[-1]
    assert request.output_schema is not None and request.output_schema.strict
    assert [t.name for t in request.tools] == ["lookup"]
    assert_invariant(result.messages)


async def test_an_invalid_native_answer_is_sent_back_with_its_errors() -> None:
    bad = {**INVOICE, "total": "twelve"}
    provider = ScriptedProvider(
        [Reply(text=json.dumps(bad)), Reply(text=json.dumps(INVOICE))], capabilities=NATIVE
    )
    result = await agent(provider).run("Invoice ACME")
    assert result.output == Invoice(**INVOICE)
    correction = provider.requests[1].messages[-1]
    assert correction.role == "user" and "total: Input should be a valid number" in correction.text


async def test_tool_mode_corrects_an_invalid_final_call_and_keeps_the_invariant() -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("final_result", customer="ACME", total=3)]),
            Reply(tool_calls=[call("final_result", **INVOICE)]),
        ],
        capabilities=TOOL_MODE,
    )
    session = InMemorySession()
    result = await agent(provider).run("Invoice ACME", session=session)
    assert result.outcome is Outcome.COMPLETED and result.output == Invoice(**INVOICE)
    assert [t.name for t in provider.requests[0].tools] == ["lookup", "final_result"]
    assert provider.requests[0].output_schema is None
    first_result = session.messages[2].tool_results[0]
    assert first_result.is_error and "lines: Field required" in first_result.text
    assert session.messages[-1].tool_results[0].text == "Final answer received."
    assert_invariant(session.messages)


async def test_tool_mode_asks_for_the_tool_when_the_model_answers_in_prose() -> None:
    provider = ScriptedProvider(
        [Reply(text="It is 12.5 for ACME."), Reply(tool_calls=[call("final_result", **INVOICE)])],
        capabilities=TOOL_MODE,
    )
    result = await agent(provider).run("Invoice ACME")
    assert result.output == Invoice(**INVOICE)
    assert "calling the `final_result` tool" in provider.requests[1].messages[-1].text


async def test_other_calls_beside_the_final_answer_are_answered_not_run() -> None:
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("lookup", customer="X"), call("final_result", **INVOICE)])],
        capabilities=TOOL_MODE,
    )
    events = [e async for e in agent(provider).stream("Invoice ACME")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.output == Invoice(**INVOICE)
    assert not any(isinstance(e, ToolEnd) for e in events)  # lookup never ran
    answers = result.messages[-1].tool_results
    assert answers[0].is_error and "Not run" in answers[0].text
    assert_invariant(result.messages)


async def test_lists_are_wrapped_for_the_model_and_unwrapped_for_the_caller() -> None:
    provider = ScriptedProvider(
        [Reply(text=json.dumps({"result": [3, 1, 2]}))], capabilities=NATIVE
    )
    result = await tether.Agent(provider, config=Config(), output_type=list[int]).run("numbers")
    assert result.output == [3, 1, 2]


async def test_past_the_retries_the_run_ends_invalid_output() -> None:
    provider = ScriptedProvider([Reply(text="not json")] * 2, capabilities=NATIVE)
    result = await agent(provider, output_retries=1).run("Invoice ACME")
    assert result.outcome is Outcome.INVALID_OUTPUT and result.output is None
    assert isinstance(result.error, OutputValidationError)
    assert "after 2 attempt(s)" in str(result.error)
    with pytest.raises(OutputValidationError):
        result.raise_for_outcome()
    assert_invariant(result.messages)


async def test_configured_retries_apply(tmp_path: object) -> None:
    config = Config.model_validate({"output": {"retries": 0}})
    provider = ScriptedProvider([Reply(text="{}")], capabilities=NATIVE)
    result = await tether.Agent(provider, config=config, output_type=Invoice).run("x")
    assert result.outcome is Outcome.INVALID_OUTPUT and len(provider.requests) == 1


def test_done_serialises_a_structured_output() -> None:
    from tether.events import event_to_dict

    provider = ScriptedProvider([Reply(text=json.dumps(INVOICE))], capabilities=NATIVE)
    result = agent(provider).run_sync("Invoice ACME")
    assert event_to_dict(Done(result))["output"] == INVOICE
    assert isinstance(result.messages[0], Message)
