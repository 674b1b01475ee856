"""``tether chat``: an interactive conversation kept in a named session.

The session lives in the configured session store (``[sessions] store``; by default a
:class:`~tether.sessions.JsonlSession` in ``<data dir>/sessions/NAME.jsonl``), so quitting
and running ``tether chat --session NAME`` again continues where it stopped; damage left
by a crash is repaired on load and reported, and the last exchanges are shown. Ctrl-C
while a response streams cancels that response only (unfinished tool calls are recorded
as interrupted, so the history stays valid, and the text streamed so far is kept, marked
interrupted) and the prompt comes back; Ctrl-D or ``/exit`` ends the chat. Lines starting
with ``/`` are commands (``/help``, ``/model``, ``/tools``, ``/clear``, ``/compact``,
``/cost``, ``/save``) handled by the chat, never sent to the model.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from . import CliState, pass_state
from .run import (
    build_agent,
    check_provider,
    exit_status,
    model_options,
    open_named_session,
    parse_tool_names,
    report_error,
    stream_run,
)
from .slash import Conversation

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.sessions import AnySession

    from .line_editor import LineReader
    from .render import Renderer

__all__ = ["chat"]

PROMPT = "> "
RECENT_TURNS = 3
"""How many of the last exchanges are shown when a session is resumed."""


def _greeting(name: str, session: AnySession) -> str:
    count = len(session.messages)
    opening = f'Resumed session "{name}" ({count} messages).' if count else f'New session "{name}".'
    return f"{opening} /help lists commands; Ctrl-C stops a response; Ctrl-D or /exit quits."


def recent_turns(session: AnySession, turns: int = RECENT_TURNS, width: int = 300) -> list[str]:
    """The last ``turns`` exchanges as short lines (``you: ...``, ``assistant: ...``)."""
    lines: list[str] = []
    seen = 0
    for message in reversed(session.messages):
        if message.role not in ("user", "assistant") or not message.text.strip():
            continue
        text = " ".join(message.text.split())
        text = text if len(text) <= width else text[: width - 1] + "…"
        lines.append(f"{'you' if message.role == 'user' else 'assistant'}: {text}")
        if message.role == "user":
            seen += 1
            if seen == turns:
                break
    return lines[::-1]


def converse(
    state: CliState,
    owner: Agent,
    name: str,
    renderer: Renderer,
    build: Callable[[str, AnySession], Agent],
    reader: LineReader | None = None,
) -> None:
    """The read-respond loop, on one event loop for the whole chat (so a provider's HTTP
    client and a session store's connections live across turns). The session ``name`` is
    opened in the configured store (``[sessions] store``) by ``owner`` before the first
    prompt; ``/model`` runs later prompts through agents made by ``build(model, session)``
    on that same session (given as an object, so they never close it).
    Lines starting with ``/`` are slash commands (:mod:`tether_cli.slash`); lines are
    read by ``reader`` (by default :func:`tether_cli.line_editor.make_reader`)."""
    if reader is None:
        from tether.config import data_dir

        from .line_editor import make_reader
        from .slash import COMMANDS

        reader = make_reader(data_dir(state.config()), name, COMMANDS)
    with asyncio.Runner() as runner:
        existed = runner.run(owner.session_store().exists(name))
        chat: Conversation | None = None
        try:
            session = runner.run(open_named_session(owner, name))
            report = getattr(session, "repair_report", None)
            if report:
                renderer.notice(f'Session "{name}" was repaired on load: {report.summary()}.')
            renderer.notice(_greeting(name, session))
            for line in recent_turns(session):
                renderer.notice(line)
            runner.run(check_provider(owner))
            chat = Conversation(
                state=state,
                agent=owner,
                session=session,
                name=name,
                renderer=renderer,
                build=lambda model: build(model, session),
            )
            while _respond(chat, runner, reader):
                pass
        finally:
            if chat is not None and chat.agent is not owner:
                runner.run(chat.agent.aclose())
            runner.run(owner.aclose())
            if not existed:
                runner.run(_drop_if_empty(owner, name))


def _respond(chat: Conversation, runner: asyncio.Runner, reader: LineReader) -> bool:
    """Read one line and act on it: a slash command, or a prompt for the model. Returns
    ``False`` when the chat should end (Ctrl-D, ``/exit``)."""
    from tether.errors import TetherError

    from .slash import handle

    renderer = chat.renderer
    try:
        entered = reader.read(PROMPT, runner)
    except KeyboardInterrupt:
        renderer.interrupted()
        renderer.notice("(Ctrl-D or /exit quits)")
        return True
    if entered is None:
        return False
    if not entered.strip():
        return True
    try:
        if entered.startswith("/") and not entered.startswith("//"):
            return runner.run(handle(chat, entered))
        prompt = entered[1:] if entered.startswith("//") else entered
        result = runner.run(stream_run(chat.agent, prompt, renderer, session=chat.session))
        if result is not None:
            chat.runs.append(result)
        exit_status(result, renderer, chat.name)
    except KeyboardInterrupt:
        renderer.interrupted()
        renderer.notice("Cancelled.")
    except TetherError as exc:
        report_error(chat.state, renderer, exc)
    return True


async def _drop_if_empty(agent: Agent, name: str) -> None:
    """A chat that failed before its first message leaves no empty session behind."""
    from tether.sessions import close_session

    store = agent.session_store()
    try:
        if await store.exists(name):
            session = await store.open(name, read_only=True)
            empty = not session.messages
            await close_session(session)
            if empty:
                await store.remove(name)
    finally:
        await store.aclose()


@click.command("chat")
@click.option(
    "-s",
    "--session",
    "session_name",
    default="default",
    show_default=True,
    help="Name of the session to resume or start (letters, digits, '.', '_', '-').",
)
@model_options
@pass_state
def chat(
    state: CliState,
    session_name: str,
    model: str | None,
    system: str | None,
    tools: tuple[str, ...],
    max_turns: int | None,
) -> None:
    """Talk with an agent in a named session that survives restarts.

    Sessions are kept in the data directory (TETHER_DATA_DIR, or `data_dir` in
    tether.toml). Ctrl-C stops the current response; Ctrl-D or /exit quits; /help lists
    the chat's own commands.
    """
    from .render import make_renderer

    renderer = make_renderer()

    def build(chosen: str | None, session: AnySession | str) -> Agent:
        return build_agent(
            state,
            model=chosen,
            system=system,
            tools=parse_tool_names(tools),
            max_turns=max_turns,
            session=session,
        )

    converse(state, build(model, session_name), session_name, renderer, build)
    renderer.finish_line()
    if sys.stdin.isatty():
        click.echo()
