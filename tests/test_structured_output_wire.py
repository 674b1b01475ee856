"""Structured output through every provider's wire format, over loopback, via the
official SDKs: native JSON-schema output (Anthropic ``output_config.format``, OpenAI
Responses ``text.format``, Chat ``response_format``, Gemini ``responseJsonSchema``) and
the final-answer tool for models configured without it, each with one invalid answer
sent back for correction. Every request must stay valid for its API.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent
from tether.config import Config, ProviderConfig
from tether.result import Outcome
from tether.retry import RetryPolicy
from tether.testing.invariant import assert_invariant
from tether_testing.http import FakeResponse, FakeServer


def _wire() -> ModuleType:
    module = sys.modules.get("provider_wire")
    if module is None:
        spec = importlib.util.spec_from_file_location(
            "provider_wire", Path(__file__).with_name("provider_wire.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["provider_wire"] = module
        spec.loader.exec_module(module)
    return module


wire = _wire()

MODELS = {
    "anthropic": ("anthropic", "claude-sonnet-4-6", ""),
    "responses": ("openai", "gpt-5.4-mini", "/v1"),
    "chat": ("openai", "gpt-4.1", "/v1"),
    "google": ("google", "gemini-2.5-flash", ""),
}


class Trip(BaseModel):
    city: str
    days: int
    packing: list[str]


GOOD = {"city": "Lisbon", "days": 3, "packing": ["sunscreen", "jacket"]}
BAD = {"city": "Lisbon", "days": "a few", "packing": ["sunscreen"]}


def reply_text(api: str, model: str, text: str) -> FakeResponse:
    if api == "anthropic":
        return wire.anthropic_reply(model, wire.anthropic_text(0, text), stop_reason="end_turn")
    if api == "responses":
        return wire.ResponsesStream(model, wire.Ledger()).message("msg_1", text).completed()
    if api == "chat":
        return wire.chat_reply(model, text)
    return wire.gemini_reply(
        model, [wire.gemini_part(text=text[:10])], [wire.gemini_part(text=text[10:])]
    )


def reply_call(api: str, model: str, call_id: str, arguments: dict[str, Any]) -> FakeResponse:
    if api == "anthropic":
        return wire.anthropic_reply(
            model,
            wire.anthropic_tool_use(0, call_id, "final_result", arguments),
            stop_reason="tool_use",
        )
    if api == "responses":
        return (
            wire.ResponsesStream(model, wire.Ledger())
            .call(f"fc_{call_id}", call_id, "final_result", arguments)
            .completed()
        )
    if api == "chat":
        return wire.chat_reply(model, "", [(call_id, "final_result", arguments)])
    return wire.gemini_reply(model, [wire.gemini_part(call=("final_result", arguments))])


def violations(api: str, body: dict[str, Any]) -> list[str]:
    if api == "anthropic":
        return list(wire.anthropic_violations(body, wire.Ledger()))
    if api == "responses":
        return list(wire.responses_violations(body, wire.Ledger()))
    if api == "chat":
        return list(wire.chat_violations(body))
    return list(
        wire.gemini_violations(
            body,
            wire.Ledger(),
            model=MODELS["google"][1],
            multimodal_responses=False,
            strict_signatures=False,
        )
    )


def native_schema(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema a request constrains the answer to, read from the API's own field."""
    if api == "anthropic":
        form = body["output_config"]["format"]
        assert form["type"] == "json_schema"
        return form["schema"]
    if api == "responses":
        form = body["text"]["format"]
        assert (form["type"], form["name"], form["strict"]) == ("json_schema", "final_result", True)
        return form["schema"]
    if api == "chat":
        form = body["response_format"]
        assert form["type"] == "json_schema" and form["json_schema"]["strict"] is True
        return form["json_schema"]["schema"]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    return config["responseJsonSchema"]


def tool_names(api: str, body: dict[str, Any]) -> list[str]:
    if api == "anthropic" or api == "responses":
        return [t["name"] for t in body.get("tools", [])]
    if api == "chat":
        return [t["function"]["name"] for t in body.get("tools", [])]
    return [d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]


def sent_text(body: dict[str, Any]) -> str:
    return json.dumps(body)


async def run(api: str, server: FakeServer, *, native: bool) -> tuple[Any, list[dict[str, Any]]]:
    provider, model, suffix = MODELS[api]
    settings: dict[str, Any] = {"base_url": server.url + suffix, "api_key": "test"}
    if not native:
        settings["models"] = {model: {"structured_output": False}}
    config = Config(providers={provider: ProviderConfig.model_validate(settings)})
    agent = Agent(
        f"{provider}/{model}",
        config=config,
        output_type=Trip,
        system="Plan trips.",
        retry=RetryPolicy(max_attempts=1),
    )
    try:
        result = await agent.run("Plan three days in Lisbon.")
    finally:
        await agent.aclose()
    return result, [r.json() for r in server.requests]


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
        "TETHER_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TETHER_PLUGINS_ALLOW", "anthropic,openai,google")


@pytest.mark.parametrize("api", list(MODELS))
def test_native_schema_output_with_one_correction(api: str, isolated: None) -> None:
    _, model, _ = MODELS[api]
    with FakeServer() as server:
        server.queue(
            reply_text(api, model, json.dumps(BAD)), reply_text(api, model, json.dumps(GOOD))
        )
        result, bodies = asyncio.run(run(api, server, native=True))
    assert result.outcome is Outcome.COMPLETED, result.error
    assert result.output == Trip(**GOOD)
    assert len(bodies) == 2
    for body in bodies:
        assert violations(api, body) == []
        schema = native_schema(api, body)
        assert set(schema["required"]) == {"city", "days", "packing"}
        assert schema["additionalProperties"] is False
        assert "final_result" not in tool_names(api, body)
    # the correction request carries the validation error back to the model
    assert "days" in sent_text(bodies[1]) and "valid integer" in sent_text(bodies[1])
    assert_invariant(result.messages)


@pytest.mark.parametrize("api", list(MODELS))
def test_final_answer_tool_with_one_correction(api: str, isolated: None) -> None:
    _, model, _ = MODELS[api]
    with FakeServer() as server:
        server.queue(
            reply_call(api, model, "call_bad01", BAD),
            reply_call(api, model, "call_good02", GOOD),
        )
        result, bodies = asyncio.run(run(api, server, native=False))
    assert result.outcome is Outcome.COMPLETED, result.error
    assert result.output == Trip(**GOOD)
    assert len(bodies) == 2
    for body in bodies:
        assert violations(api, body) == []
        assert tool_names(api, body) == ["final_result"]
        assert "output_config" not in body and "response_format" not in body
        assert "responseJsonSchema" not in body.get("generationConfig", {})
    assert "valid integer" in sent_text(bodies[1])
    assert_invariant(result.messages)
    # the accepted call is answered too, so the session can go on
    assert result.messages[-1].role == "tool"
    assert result.messages[-1].tool_results[0].content == "Final answer received."


@pytest.mark.parametrize("api", ["anthropic", "chat"])
def test_invalid_answers_past_the_retries_end_with_a_typed_outcome(
    api: str, isolated: None
) -> None:
    _, model, _ = MODELS[api]
    with FakeServer() as server:
        server.queue(*(reply_text(api, model, json.dumps(BAD)) for _ in range(3)))
        result, bodies = asyncio.run(run(api, server, native=True))
    assert result.outcome is Outcome.INVALID_OUTPUT
    assert len(bodies) == 3  # the first answer and the two default retries
    assert result.output is None
    assert "days" in str(result.error)
