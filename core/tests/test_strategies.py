"""Strategies on the one loop: Plan-and-Execute (plan, steps with progress events,
re-planning after a failed step) and Reflexion (checker, stored reflections), selected
per Agent, from the configuration, or registered by a plugin."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import tether
from tether.config import Config
from tether.events import Done, PlanUpdate, Reflection, RunEvent, StepEnd, StepStart, ToolEnd
from tether.provider import ModelCapabilities, ModelRequest
from tether.result import Outcome, RunResult
from tether.sessions import InMemorySession
from tether.strategies import AttemptsExhausted
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

NATIVE = ModelCapabilities(structured_output=True)


@tether.tool
def fetch(source: str) -> str:
    """Fetch a source."""
    if source == "live":
        raise RuntimeError("the live feed is offline")
    return f"data from {source}"


def planner(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    prompt = next(m.text for m in reversed(request.messages) if m.role == "user")
    if last.role == "tool":
        result = last.tool_results[0]
        return Reply(text=json.dumps({"done": not result.is_error, "result": result.text}))
    if prompt.startswith("Tide report") and "First make a plan" in prompt:
        return Reply(text=json.dumps({"steps": ["fetch the live feed", "summarise"]}))
    if "failed" in prompt and "new plan" in prompt:
        return Reply(text=json.dumps({"steps": ["fetch the cached feed", "summarise"]}))
    if "fetch the live feed" in prompt:
        return Reply(tool_calls=[call("fetch", source="live")])
    if "fetch the cached feed" in prompt:
        return Reply(tool_calls=[call("fetch", source="cache")])
    if "summarise" in prompt:
        return Reply(text=json.dumps({"done": True, "result": "high tide 18:40"}))
    if prompt.startswith("All steps are done"):
        return Reply(text="High tide is at 18:40 (from the cached feed).")
    raise AssertionError(prompt)


async def test_plan_and_execute_replans_after_a_failed_step() -> None:
    provider = ScriptedProvider(handler=planner, capabilities=NATIVE)
    session = InMemorySession()
    agent = tether.Agent(provider, tools=[fetch], config=Config(), strategy="plan-and-execute")
    events: list[RunEvent] = [
        e async for e in agent.stream("Tide report for Lisbon", session=session)
    ]
    done = events[-1]
    assert isinstance(done, Done) and sum(isinstance(e, Done) for e in events) == 1
    result = done.result
    assert result.outcome is Outcome.COMPLETED
    assert result.output == "High tide is at 18:40 (from the cached feed)."
    progress = [e for e in events if isinstance(e, PlanUpdate | StepStart | StepEnd)]
    assert [(type(e).__name__, getattr(e, "index", None)) for e in progress] == [
        ("PlanUpdate", None),
        ("StepStart", 0),
        ("StepEnd", 0),
        ("PlanUpdate", None),
        ("StepStart", 0),
        ("StepEnd", 0),
        ("StepStart", 1),
        ("StepEnd", 1),
    ]
    assert progress[0].steps == ["fetch the live feed", "summarise"]  # type: ignore[union-attr]
    assert not progress[2].ok and "offline" in progress[2].summary  # type: ignore[union-attr]
    assert progress[3].steps == ["fetch the cached feed", "summarise"]  # type: ignore[union-attr]
    assert "failed" in (progress[3].reason or "")  # type: ignore[union-attr]
    # tool events of the steps stream through, and every run's usage is added up
    assert [e.name for e in events if isinstance(e, ToolEnd)] == ["fetch", "fetch"]
    assert result.turns == len(provider.requests) == 8
    assert result.usage.input_tokens == 10 * 8
    assert_invariant(session.messages)


async def test_reflexion_stores_a_reflection_and_gives_it_to_the_next_attempt() -> None:
    def model(request: ModelRequest) -> Reply:
        prompt = request.messages[-1].text
        if prompt.startswith("Your attempt was judged wrong"):
            return Reply(text="I forgot to carry the one.")
        if "Lessons from earlier attempts" in prompt:
            return Reply(text="5")
        return Reply(text="4")

    judged: list[str] = []

    def checker(result: RunResult) -> tuple[bool, str]:
        judged.append(result.output)
        return result.output == "5", "2 + 3 is not 4"

    provider = ScriptedProvider(handler=model)
    agent = tether.Agent(provider, config=Config(), strategy=tether.strategies.Reflexion(checker))
    events = [e async for e in agent.stream("What is 2 + 3?")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.ok and result.output == "5" and judged == ["4", "5"]
    (reflection,) = [e for e in events if isinstance(e, Reflection)]
    assert (reflection.attempt, reflection.feedback, reflection.text) == (
        1,
        "2 + 3 is not 4",
        "I forgot to carry the one.",
    )
    assert "- I forgot to carry the one." in provider.requests[-1].messages[-1].text
    assert_invariant(result.messages)


async def test_reflexion_gives_up_after_its_attempts_and_judges_itself_by_default() -> None:
    def model(request: ModelRequest) -> Reply:
        prompt = request.messages[-1].text
        if prompt.startswith("Judge the answer"):
            return Reply(text=json.dumps({"ok": False, "feedback": "too vague"}))
        if prompt.startswith("Your attempt was judged wrong"):
            return Reply(text="Be specific.")
        return Reply(text="Somewhere.")

    config = Config.model_validate(
        {"strategy": {"name": "reflexion", "settings": {"max_attempts": 2}}}
    )
    provider = ScriptedProvider(handler=model, capabilities=NATIVE)
    result = await tether.Agent(provider, config=config).run("Where is the harbour?")
    assert result.outcome is Outcome.LIMIT and isinstance(result.error, AttemptsExhausted)
    assert "too vague" in str(result.error)
    assert result.output == "Somewhere."
    # attempt, verdict, reflection, attempt, verdict
    assert len(provider.requests) == result.turns == 5


async def test_a_plugin_registers_its_own_strategy() -> None:
    class Shout:
        name = "shout"

        async def stream(self, agent: Any, prompt: str, **kwargs: Any) -> Any:
            async for event in agent._loop(
                tether.messages.Message.user(prompt.upper()), None, None, None
            ):
                yield event

    @tether.hookimpl
    def register_strategies(strategies):  # type: ignore[no-untyped-def]
        strategies.add("shout", Shout)

    provider = ScriptedProvider([Reply(text="OK")])
    agent = tether.Agent(
        provider,
        config=Config(),
        strategy="shout",
        plugins=[SimpleNamespace(register_strategies=register_strategies)],
    )
    assert (await agent.run("quiet please")).ok
    assert provider.requests[0].messages[0].text == "QUIET PLEASE"
