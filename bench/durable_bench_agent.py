"""The agent of ``durable_bench.py``: an instant rule-based model and a no-op tool.

A prompt ``rounds N`` makes the model call ``noop`` N times, one call per response, then
answer ``done``; the model decides from the history alone, so any worker can continue
any run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import tether
from tether.config import Config
from tether.events import TextDelta
from tether.messages import Message, StopReason, TextBlock, ToolCallBlock, Usage
from tether.provider import BaseProvider, ModelRequest, ModelResponse, ProviderEvent


class InstantModel(BaseProvider):
    name = "instant"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        messages = request.messages
        start = max(i for i, m in enumerate(messages) if m.role == "user")
        rounds = int(messages[start].text.split()[-1])
        done = sum(1 for m in messages[start:] if m.role == "tool")
        if done < rounds:
            call = ToolCallBlock(id=f"c{start}-{done}", name="noop", arguments={"i": done})
            message = Message(role="assistant", content=[call])
            stop = StopReason.TOOL_USE
        else:
            yield TextDelta("done")
            message = Message(role="assistant", content=[TextBlock(text="done")])
            stop = StopReason.END_TURN
        message.meta.model = "instant/v1"
        yield ModelResponse(message, stop, Usage(input_tokens=1, output_tokens=1), "instant/v1")


@tether.tool
def noop(i: int) -> str:
    """Do nothing."""
    return "ok"


def make_agent(config: Config) -> tether.Agent:
    return tether.Agent(InstantModel(), tools=[noop], config=config, limits={"max_turns": 1000})
