"""Escalation to a person, continuing answers cut off at the output limit, and stop
sequences — each through stream() and run() on the one loop."""

from __future__ import annotations

import tether
from tether.config import Config
from tether.errors import NeedsHuman
from tether.events import Done, ToolEnd
from tether.messages import StopReason, Usage
from tether.provider import ModelCapabilities
from tether.result import Outcome
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

RAN: list[str] = []


@tether.tool
def deploy(env: str) -> str:
    """Deploy to an environment."""
    raise NeedsHuman(
        "The deploy token expired.",
        user_message="Renew the deploy token (tether login), then resume.",
    )


@tether.tool
def status(env: str) -> str:
    """Status of an environment."""
    RAN.append(env)
    return f"{env}: green"


async def test_needs_human_ends_the_run_with_its_own_outcome_and_a_valid_session() -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("status", env="prod"), call("deploy", env="prod")]),
            Reply(text="never"),
        ]
    )
    session = InMemorySession()
    agent = tether.Agent(provider, tools=[status, deploy], config=Config())
    events = [e async for e in agent.stream("ship it", session=session)]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.NEEDS_HUMAN
    assert isinstance(result.error, NeedsHuman)
    assert result.error.user_message == "Renew the deploy token (tether login), then resume."
    assert len(provider.requests) == 1  # the model was not asked to work around it
    results = session.messages[-1].tool_results
    assert results[0].text == "prod: green" and results[1].is_error
    assert [e.is_error for e in events if isinstance(e, ToolEnd)] == [False, True]
    assert_invariant(session.messages)
    # the session goes on once the person has acted
    provider.queue(Reply(text="Deployed."))
    assert (await agent.run("token renewed, go on", session=session)).ok


CUT = Usage(input_tokens=10, output_tokens=50)


async def test_an_answer_cut_at_max_tokens_is_continued_with_a_raised_limit() -> None:
    provider = ScriptedProvider(
        [
            Reply(text="The three causes are: one, ", stop_reason=StopReason.MAX_TOKENS, usage=CUT),
            Reply(text="two, and three.", stop_reason=StopReason.END_TURN),
        ],
        capabilities=ModelCapabilities(max_output_tokens=4096),
    )
    agent = tether.Agent(
        provider, config=Config(), max_output_tokens=50, max_tokens_continuations=2
    )
    result = await agent.run("causes?")
    assert result.outcome is Outcome.COMPLETED
    assert result.output == "The three causes are: one, two, and three."
    assert [r.max_output_tokens for r in provider.requests] == [50, 4096]
    assert "cut off by the output-token limit" in provider.requests[1].messages[-1].text
    assert_invariant(result.messages)


async def test_continuations_are_bounded_and_off_by_default() -> None:
    cut = [Reply(text="a", stop_reason=StopReason.MAX_TOKENS) for _ in range(3)]
    result = await tether.Agent(ScriptedProvider(cut), config=Config()).run("x")
    assert result.outcome is Outcome.MAX_TOKENS and result.turns == 1
    config = Config.model_validate(
        {"output": {"max_tokens_continuations": 1, "continuation_max_output_tokens": 999}}
    )
    provider = ScriptedProvider(cut)
    events = [e async for e in tether.Agent(provider, config=config).stream("x")]
    done = events[-1]
    assert isinstance(done, Done) and done.result.outcome is Outcome.MAX_TOKENS
    assert done.result.turns == 2 and provider.requests[1].max_output_tokens == 999


async def test_stop_sequences_from_the_agent_and_the_config_reach_the_request() -> None:
    provider = ScriptedProvider([Reply(text="Answer", stop_reason=StopReason.STOP_SEQUENCE)])
    result = await tether.Agent(provider, config=Config(), stop_sequences=["</answer>"]).run("x")
    assert result.ok and provider.requests[0].stop_sequences == ("</answer>",)
    config = Config.model_validate({"output": {"stop_sequences": ["END"]}})
    provider = ScriptedProvider([Reply(text="Answer")])
    await tether.Agent(provider, config=config).run("x")
    assert list(provider.requests[0].stop_sequences) == ["END"]
