"""The loop: one implementation, identical histories, stop reasons, tools and the invariant."""

from __future__ import annotations

import asyncio

import pytest

import tether
from tether.config import Config
from tether.events import Done, TextDelta, ThinkingDelta, ToolEnd, ToolStart, TurnEnd
from tether.messages import ImageBlock, Message, StopReason, TextBlock, ToolCallBlock
from tether.provider import ModelCapabilities
from tether.result import Outcome
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call


@tether.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def script() -> list[Reply]:
    return [
        Reply(text="Let me add those.", tool_calls=[call("add", a=1, b=2), call("add", a=3, b=4)]),
        Reply(
            thinking="both done",
            signature="sig",
            text="Now one more.",
            tool_calls=[call("add", a=5, b=6)],
        ),
        Reply(text="The sums are 3, 7 and 11."),
    ]


def agent_for(provider: ScriptedProvider, **kwargs: object) -> tether.Agent:
    return tether.Agent(provider, tools=[add], config=Config(), **kwargs)  # type: ignore[arg-type]


def comparable(messages: list[Message]) -> list[dict[str, object]]:
    return [m.model_dump(exclude={"meta": {"id", "created_at"}}) for m in messages]


async def test_stream_and_run_produce_identical_histories() -> None:
    streamed_session, run_session = InMemorySession(), InMemorySession()
    events = [
        e
        async for e in agent_for(ScriptedProvider(script())).stream("add", session=streamed_session)
    ]
    result = await agent_for(ScriptedProvider(script())).run("add", session=run_session)

    assert comparable(list(streamed_session.messages)) == comparable(list(run_session.messages))
    assert result.output == "The sums are 3, 7 and 11."
    assert [m.role for m in run_session.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first = run_session.messages[1]
    assert first.text == "Let me add those." and [c.name for c in first.tool_calls] == [
        "add",
        "add",
    ]
    assert [r.text for r in run_session.messages[2].tool_results] == ["3", "7"]
    assert_invariant(run_session.messages)

    kinds = [type(e).__name__ for e in events]
    assert kinds[-1] == "Done" and kinds.count("Done") == 1
    assert (
        kinds.count("TurnEnd") == 3
        and kinds.count("ToolStart") == 3
        and kinds.count("ToolEnd") == 3
    )
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "Let me add those.Now one more.The sums are 3, 7 and 11."
    )
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["both done"]
    done = events[-1]
    assert isinstance(done, Done) and done.result.outcome is Outcome.COMPLETED
    assert (done.result.turns, done.result.tool_calls, done.result.tool_errors) == (3, 3, 0)
    assert done.result.usage.input_tokens == 30 and done.result.messages == list(
        streamed_session.messages
    )


def test_run_sync_consumes_the_same_stream() -> None:
    result = agent_for(ScriptedProvider(script())).run_sync("add")
    assert result.ok and result.output == "The sums are 3, 7 and 11." and len(result.messages) == 6


async def test_the_system_prompt_and_tools_are_byte_stable_across_turns() -> None:
    provider = ScriptedProvider(script())
    await agent_for(provider, system="You add numbers.").run("add")
    systems = {r.system for r in provider.requests}
    tool_sets = {tuple((t.name, str(t.parameters)) for t in r.tools) for r in provider.requests}
    assert systems == {"You add numbers."} and len(tool_sets) == 1
    # every request's history is a prefix of the next one's
    for before, after in zip(provider.requests, provider.requests[1:], strict=False):
        assert list(after.messages[: len(before.messages)]) == list(before.messages)


async def test_a_session_continues_across_runs() -> None:
    session = InMemorySession()
    provider = ScriptedProvider([Reply(text="Hi."), Reply(text="Again.")])
    agent = agent_for(provider, session=session)
    await agent.run("hello")
    await agent.run("once more")
    assert [m.text for m in session.messages] == ["hello", "Hi.", "once more", "Again."]
    assert [m.text for m in provider.requests[1].messages] == ["hello", "Hi.", "once more"]


async def test_parallel_tools_finishing_out_of_order_keep_declared_order() -> None:
    slow_may_finish = asyncio.Event()

    @tether.tool
    async def wait_for(name: str) -> str:
        """Wait."""
        if name == "slow":
            await slow_may_finish.wait()
        return name

    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("wait_for", name="slow"), call("wait_for", name="fast")]),
            Reply(text="ok"),
        ]
    )
    session = InMemorySession()
    finished: list[str] = []
    agent = tether.Agent(provider, tools=[wait_for], config=Config())
    async for event in agent.stream("go", session=session):
        if isinstance(event, ToolEnd):
            finished.append(event.result.text)
            slow_may_finish.set()  # only once "fast" has been reported
    assert finished == ["fast", "slow"]
    assert [r.text for r in session.messages[2].tool_results] == ["slow", "fast"]
    assert_invariant(session.messages)


async def test_sequential_tools_and_disabled_parallelism_run_one_at_a_time() -> None:
    running = 0
    peak = 0

    async def body() -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return "ok"

    @tether.tool
    async def free() -> str:
        """Parallel-safe."""
        return await body()

    @tether.tool(sequential=True)
    async def exclusive() -> str:
        """Must run alone."""
        return await body()

    replies = [
        Reply(tool_calls=[call("free"), call("free"), call("exclusive"), call("free")]),
        Reply(text="done"),
    ]
    await tether.Agent(ScriptedProvider(replies), tools=[free, exclusive], config=Config()).run("x")
    assert peak == 2  # the two leading free calls overlap; exclusive runs alone

    peak = 0
    replies = [Reply(tool_calls=[call("free"), call("free")]), Reply(text="done")]
    await tether.Agent(
        ScriptedProvider(replies), tools=[free], config=Config(), parallel_tools=False
    ).run("x")
    assert peak == 1


async def test_tool_failures_become_error_results_and_the_run_goes_on() -> None:
    @tether.tool
    def explode() -> str:
        """Explode."""
        raise RuntimeError("disk on fire")

    @tether.tool(timeout=0.01)
    async def hang() -> str:
        """Hang."""
        await asyncio.Event().wait()
        return "never"

    replies = [
        Reply(
            tool_calls=[
                call("explode"),
                call("hang"),
                call("nonexistent_tool", x=1),
                ToolCallBlock(id="bad", name="add", raw_arguments='{"a": 1,'),
                call("add", a="one", b=2),
            ]
        ),
        Reply(text="Recovered."),
    ]
    session = InMemorySession()
    agent = tether.Agent(ScriptedProvider(replies), tools=[add, explode, hang], config=Config())
    result = await agent.run("go", session=session)
    assert result.ok and result.output == "Recovered."
    results = session.messages[2].tool_results
    assert all(r.is_error for r in results) and result.tool_errors == 5
    assert results[0].text == "Tool `explode` failed: RuntimeError: disk on fire"
    assert "timed out after 0.01 s" in results[1].text
    assert (
        "no tool named `nonexistent_tool`" in results[2].text
        and "add, explode, hang" in results[2].text
    )
    assert "not a valid JSON object" in results[3].text
    assert "- a: Input should be a valid integer" in results[4].text
    assert_invariant(session.messages)


async def test_max_tokens_stop_answers_cut_off_calls_and_ends_with_a_typed_outcome() -> None:
    provider = ScriptedProvider(
        [Reply(text="partial", tool_calls=[call("add", a=1)], stop_reason=StopReason.MAX_TOKENS)]
    )
    session = InMemorySession()
    result = await agent_for(provider).run("x", session=session)
    assert result.outcome is Outcome.MAX_TOKENS and result.stop_reason is StopReason.MAX_TOKENS
    assert result.output == "partial"
    assert session.messages[-1].tool_results[0].is_error
    assert "cut off" in session.messages[-1].tool_results[0].text
    assert_invariant(session.messages)


async def test_refusal_and_stop_sequence_outcomes() -> None:
    refused = await agent_for(
        ScriptedProvider([Reply(text="I can't.", stop_reason=StopReason.REFUSAL)])
    ).run("x")
    assert refused.outcome is Outcome.REFUSAL and not refused.ok
    with pytest.raises(tether.errors.RefusalError):
        refused.raise_for_outcome()
    stopped = await agent_for(
        ScriptedProvider([Reply(text="END", stop_reason=StopReason.STOP_SEQUENCE)])
    ).run("x")
    assert stopped.ok and stopped.stop_reason is StopReason.STOP_SEQUENCE


async def test_images_stay_in_tool_results_in_the_history_whatever_the_model() -> None:
    """The history keeps the tool's images where it returned them (adapters that cannot
    send them there move them on the wire), so the session can continue on any model."""

    @tether.tool
    def screenshot() -> list[TextBlock | ImageBlock]:
        """Screenshot."""
        return [
            TextBlock(text="the screen"),
            ImageBlock(data="iVBORw0KGgo=", mime_type="image/png"),
        ]

    replies = [Reply(tool_calls=[call("screenshot")]), Reply(text="I see it.")]
    blind = ScriptedProvider(replies, capabilities=ModelCapabilities(images_in_tool_results=False))
    session = InMemorySession()
    await tether.Agent(blind, tools=[screenshot], config=Config()).run("look", session=session)
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    result = session.messages[2].tool_results[0]
    assert [type(b) for b in result.content] == [TextBlock, ImageBlock]
    assert_invariant(session.messages)

    sighted = ScriptedProvider(replies)
    session = InMemorySession()
    await tether.Agent(sighted, tools=[screenshot], config=Config()).run("look", session=session)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]


async def test_turn_end_reports_usage_latency_stop_reason_model_and_cost() -> None:
    from tether.messages import Usage
    from tether.provider import Pricing

    caps = ModelCapabilities(pricing=Pricing(input=3.0, output=15.0, cache_read=0.3))
    provider = ScriptedProvider(
        [
            Reply(
                text="hi",
                usage=Usage(
                    input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=500_000
                ),
            )
        ],
        capabilities=caps,
    )
    events = [e async for e in agent_for(provider).stream("x")]
    turn = next(e for e in events if isinstance(e, TurnEnd))
    assert turn.model == "scripted/scripted-model" and turn.stop_reason is StopReason.END_TURN
    assert turn.latency >= 0 and turn.usage.output_tokens == 100_000
    assert turn.cost == pytest.approx(500_000 * 3 / 1e6 + 500_000 * 0.3 / 1e6 + 100_000 * 15 / 1e6)
    assert events[-1].result.cost == pytest.approx(turn.cost)  # type: ignore[union-attr]


async def test_tool_events_carry_call_ids_names_and_arguments() -> None:
    events = [e async for e in agent_for(ScriptedProvider(script())).stream("x")]
    starts = [(e.call_id, e.name, e.arguments) for e in events if isinstance(e, ToolStart)]
    assert starts == [
        ("call_1", "add", {"a": 1, "b": 2}),
        ("call_2", "add", {"a": 3, "b": 4}),
        ("call_3", "add", {"a": 5, "b": 6}),
    ]


async def test_a_repaired_session_is_announced_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tether.events import RunStart, SessionRepaired
    from tether.sessions import JsonlSession

    path = tmp_path / "s.jsonl"
    with JsonlSession(path) as session:
        session.append(Message.user("hi"))
        session.append(
            Message(
                role="assistant",
                content=[ToolCallBlock(id="c1", name="add", arguments={"a": 1, "b": 2})],
            )
        )
    with path.open("a") as f:
        f.write('{"role": "tool", "content": [{"type": "tool_res')  # torn by a crash

    session = JsonlSession(path)
    try:
        agent = agent_for(ScriptedProvider([Reply(text="one"), Reply(text="two")]))
        first = [e async for e in agent.stream("again", session=session)]
        second = [e async for e in agent.stream("and again", session=session)]
    finally:
        session.close()
    assert isinstance(first[0], RunStart) and isinstance(first[1], SessionRepaired)
    assert first[1].report
    assert not any(isinstance(e, SessionRepaired) for e in second)
    assert_invariant(session.messages)
