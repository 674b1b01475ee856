"""Keeping what the user saw of an answer they interrupted.

When Ctrl-C stops a response while it streams, the runner ends the run as cancelled with
the user's message last in the session: the streamed text is not part of the history.
The next prompt would then follow a user message with another one, and the model would
not know what it had already said. :class:`PartialAnswer` collects the text of the
response being streamed; :func:`keep_interrupted_answer` appends it to the session as an
assistant message marked ``meta.interrupted``, ending with a note the model can read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.events import RunEvent
    from tether.messages import Message
    from tether.result import RunResult
    from tether.sessions import AnySession

__all__ = [
    "INTERRUPTED_NOTE",
    "PartialAnswer",
    "counting_the_interrupted_call",
    "keep_interrupted_answer",
]

INTERRUPTED_NOTE = "[Interrupted by the user.]"


class PartialAnswer:
    """The text streamed by the model call in progress (reset when a call ends or is
    retried: a retry discards what the failed attempt streamed)."""

    def __init__(self) -> None:
        self._pieces: list[str] = []

    def see(self, event: RunEvent) -> None:
        from tether.events import Retry, TextDelta, TurnEnd

        if isinstance(event, TextDelta):
            self._pieces.append(event.text)
        elif isinstance(event, TurnEnd | Retry):
            self._pieces.clear()

    @property
    def text(self) -> str:
        return "".join(self._pieces)


async def keep_interrupted_answer(session: AnySession, text: str, model: str | None) -> bool:
    """Append the interrupted answer ``text`` to ``session`` if its last message is not
    an assistant message (so two user messages never follow each other). Returns whether
    a message was added. The invariant holds: any unanswered tool call was already
    answered as interrupted by the runner, so the new message follows a tool result or
    the user's prompt."""
    from tether.messages import Message, MessageMeta, TextBlock
    from tether.sessions.base import append_message

    messages = session.messages
    if not messages or messages[-1].role == "assistant":
        return False
    body = f"{text.rstrip()}\n\n{INTERRUPTED_NOTE}" if text.strip() else INTERRUPTED_NOTE
    meta = MessageMeta(model=model, interrupted=True)
    message = Message(role="assistant", content=[TextBlock(text=body)], meta=meta)
    await append_message(session, message)
    return True


def counting_the_interrupted_call(
    result: RunResult, partial: str, sent: Sequence[Message], agent: Agent
) -> RunResult:
    """``result`` with the model call that Ctrl-C interrupted counted in: a provider
    reports usage only when a response ends, so an interrupted response is missing from
    the run's totals although its input was read and ``partial`` was written. Its tokens
    are estimated (the history it was ``sent`` and the system prompt, and ``partial``),
    and its cost follows from the model's prices when they are known."""
    from dataclasses import replace

    from tether.messages import Usage
    from tether.tokens import estimate_messages, estimate_tokens

    if not partial:
        return result
    used = Usage(
        input_tokens=estimate_messages(sent) + estimate_tokens(agent.system or ""),
        output_tokens=estimate_tokens(partial),
    )
    pricing = agent.provider().capabilities(agent.model_ref.model).pricing
    cost = result.cost
    if pricing is not None:
        cost = (cost or 0.0) + pricing.cost(used)
    return replace(result, usage=result.usage + used, cost=cost, cost_breakdown=None)
