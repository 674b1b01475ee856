"""A compaction's own model call (the summary) is bounded like the run's model calls: a
summary request that stalls hits the stream idle timeout, and compaction falls back to
dropping old turns instead of holding the run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

import tether
from tether.compaction.summarize import SUMMARY_SYSTEM, SummarizeStrategy
from tether.config import Config, LimitsConfig
from tether.events import Compaction
from tether.messages import Usage
from tether.provider import ModelCapabilities, ModelRequest, ProviderEvent
from tether.result import Outcome
from tether.sessions import InMemorySession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call


class StallsOnSummaries(ScriptedProvider):
    """Answers the run's requests from the script; a summary request never answers."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.system == SUMMARY_SYSTEM:
            await asyncio.Event().wait()
        async for event in super().stream(request):
            yield event


@tether.tool(max_output_chars=None)
def fetch_log(n: int) -> str:
    """Return part of a long log."""
    return f"part {n}: " + "log line\n" * 400


async def test_a_stalled_summary_falls_back_instead_of_hanging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = [Reply(tool_calls=[call("fetch_log", n=i)]) for i in range(6)]
    provider = StallsOnSummaries(
        [*script, Reply(text="The log is fine.")],
        capabilities=ModelCapabilities(context_window=8000, images_in_tool_results=True),
        usage=Usage(output_tokens=5),  # no reported input: the estimate decides
    )
    session = InMemorySession()
    agent = tether.Agent(
        provider,
        tools=[fetch_log],
        config=Config(),
        compaction=SummarizeStrategy(threshold=0.6, keep_recent=0.3, summary_tokens=256),
        limits=LimitsConfig(stream_idle_timeout_s=0.2, wall_time_s=60),
    )
    with caplog.at_level(logging.WARNING, logger="tether"):
        events = [e async for e in agent.stream("Check the log.", session=session)]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.COMPLETED and result.output == "The log is fine."
    assert any(isinstance(e, Compaction) for e in events)
    assert "stream sent nothing for 0.2 s" in caplog.text
    assert "without a summary" in caplog.text
    assert_invariant(session.messages)
