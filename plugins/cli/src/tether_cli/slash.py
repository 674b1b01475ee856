"""Slash commands of ``tether chat``: handled by the chat itself, never sent to the model.

A line starting with ``/`` is a command; ``//text`` sends ``/text`` to the model. An
unknown command is reported and the prompt comes back. Commands are plain functions in
:data:`COMMANDS` (name -> :class:`SlashCommand`), so adding one is adding an entry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.messages import Usage
    from tether.result import RunResult
    from tether.sessions import AnySession

    from . import CliState
    from .render import Renderer

__all__ = ["COMMANDS", "Conversation", "SlashCommand", "handle"]


@dataclass
class Conversation:
    """What a chat's commands act on: the agent (replaced by ``/model``), its session,
    the renderer, and what this chat's runs used so far."""

    state: CliState
    agent: Agent
    session: AnySession
    name: str
    renderer: Renderer
    build: Callable[[str], Agent]
    """Builds an agent for another model, with the chat's other options."""
    runs: list[RunResult] = field(default_factory=list)
    owner: Agent | None = None
    """The agent that opened the session (closed by the chat at the end); ``agent`` at first."""

    def __post_init__(self) -> None:
        if self.owner is None:
            self.owner = self.agent

    def usage(self) -> tuple[Usage, float | None]:
        """Tokens and dollars of this chat's runs (cost ``None`` when unpriced)."""
        from tether.messages import Usage

        total = Usage()
        cost: float | None = None
        for result in self.runs:
            total = total + result.usage
            if result.cost is not None:
                cost = (cost or 0.0) + result.cost
        return total, cost


@dataclass(frozen=True)
class SlashCommand:
    usage: str
    summary: str
    run: Callable[[Conversation, str], Awaitable[bool]]
    """Returns ``False`` to end the chat."""


async def _help(chat: Conversation, argument: str) -> bool:
    width = max(len(c.usage) for c in COMMANDS.values())
    for command in COMMANDS.values():
        chat.renderer.notice(f"{command.usage.ljust(width)}  {command.summary}")
    chat.renderer.notice("//text sends /text to the model. Ctrl-C stops a response.")
    return True


async def _exit(chat: Conversation, argument: str) -> bool:
    return False


async def _model(chat: Conversation, argument: str) -> bool:
    from tether.errors import TetherError

    from .run import check_provider

    if not argument:
        chat.renderer.notice(f"Model: {chat.agent.model_ref}. /model NAME switches.")
        return True
    try:
        agent = chat.build(argument)
        await check_provider(agent)
    except TetherError as exc:
        chat.renderer.error(f"{exc} Still using {chat.agent.model_ref}.")
        return True
    if chat.agent is not chat.owner:  # the owner keeps the session open until the end
        await chat.agent.aclose()
    chat.agent = agent
    chat.renderer.notice(f"Model: {agent.model_ref}.")
    return True


async def _tools(chat: Conversation, argument: str) -> bool:
    tools = chat.agent.tools()
    if not tools:
        chat.renderer.notice("No tools. Start the chat with --tools NAMES to offer some.")
    for tool in tools:
        summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        chat.renderer.notice(f"{tool.name}: {summary}")
    return True


async def _clear(chat: Conversation, argument: str) -> bool:
    count = len(chat.session.messages)
    from tether.sessions.base import replace_messages

    await replace_messages(chat.session, [])
    chat.renderer.notice(f"History cleared ({count} messages). The session continues empty.")
    return True


async def _compact(chat: Conversation, argument: str) -> bool:
    """Compact now, showing that it runs (a summary can take the model a minute), and
    keep the result only if it is smaller than the history it would replace."""
    chat.renderer.notice("Compacting the history…")
    event = await chat.agent.compact(chat.session, only_if_smaller=True)
    if event is None:
        chat.renderer.notice("Nothing to compact: the history is already short.")
    elif event.tokens_after >= event.tokens_before:
        chat.renderer.notice(
            f"Compaction not kept: its result ({event.tokens_after:,} tokens) is not smaller "
            f"than the history ({event.tokens_before:,} tokens). The history is unchanged."
        )
    else:
        chat.renderer.event(event)
    return True


async def _cost(chat: Conversation, argument: str) -> bool:
    usage, cost = chat.usage()
    money = f"${cost:.4f}" if cost is not None else "no price known"
    chat.renderer.notice(
        f"This chat: {len(chat.runs)} responses, {usage.input_tokens:,} in / "
        f"{usage.output_tokens:,} out tokens, {money}."
    )
    return True


async def _save(chat: Conversation, argument: str) -> bool:
    path = Path(argument or f"{chat.name}.md")
    text = transcript(chat.session)
    try:
        await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    except OSError as exc:
        chat.renderer.error(f"Cannot write {path}: {exc.strerror or exc}. Give another file.")
        return True
    chat.renderer.notice(
        f"Saved the conversation ({len(chat.session.messages)} messages) to {path}."
    )
    return True


def transcript(session: AnySession) -> str:
    """The conversation as Markdown: each message's text, tool calls and results."""
    parts = []
    for message in session.messages:
        if message.role == "tool":
            for result in message.tool_results:
                label = "error" if result.is_error else "result"
                parts.append(f"**tool {label}**\n\n```\n{result.text}\n```")
            continue
        heading = "**you**" if message.role == "user" else f"**{message.role}**"
        body = [message.text] if message.text else []
        body += [f"`{call.name}({call.arguments})`" for call in message.tool_calls]
        parts.append(heading + "\n\n" + "\n\n".join(body))
    return "\n\n".join(parts) + "\n"


COMMANDS: dict[str, SlashCommand] = {
    "/help": SlashCommand("/help", "this list", _help),
    "/model": SlashCommand("/model [NAME]", "show the model, or switch to NAME", _model),
    "/tools": SlashCommand("/tools", "the tools the model can use", _tools),
    "/clear": SlashCommand("/clear", "forget the history of this session", _clear),
    "/compact": SlashCommand("/compact", "summarise the older history now", _compact),
    "/cost": SlashCommand("/cost", "tokens and dollars used in this chat", _cost),
    "/save": SlashCommand("/save [FILE]", "write the conversation as Markdown", _save),
    "/exit": SlashCommand("/exit", "quit (or Ctrl-D)", _exit),
    "/quit": SlashCommand("/quit", "quit", _exit),
}


async def handle(chat: Conversation, line: str) -> bool:
    """Run the slash command on ``line``; returns ``False`` when the chat should end."""
    name, _, argument = line.strip().partition(" ")
    command = COMMANDS.get(name.lower())
    if command is None:
        chat.renderer.error(f"Unknown command {name}. /help lists the commands.")
        return True
    return await command.run(chat, argument.strip())
