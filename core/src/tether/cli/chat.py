"""``tether chat``: an interactive conversation kept in a named session.

The session lives in the configured session store (``[sessions] store``; by default a
:class:`~tether.sessions.JsonlSession` in ``<data dir>/sessions/NAME.jsonl``), so quitting
and running ``tether chat --session NAME`` again continues where it stopped; damage left
by a crash is repaired on load and reported. Ctrl-C while a response streams cancels
that response only (unfinished tool calls are recorded as interrupted, so the history
stays valid) and the prompt comes back; Ctrl-D or ``/exit`` ends the chat.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from . import CliState, pass_state
from .run import (
    build_agent,
    check_provider,
    exit_status,
    model_options,
    parse_tool_names,
    report_error,
    stream_run,
)

if TYPE_CHECKING:
    from ..agent import Agent
    from ..sessions import AnySession
    from .render import Renderer

__all__ = ["chat"]

EXIT_WORDS = frozenset({"/exit", "/quit"})
PROMPT = "> "


def read_line(prompt: str) -> str | None:
    """One line from the user; ``None`` at end of input (Ctrl-D)."""
    try:
        return input(prompt)
    except EOFError:
        return None


def _greeting(name: str, session: AnySession) -> str:
    count = len(session.messages)
    opening = f'Resumed session "{name}" ({count} messages).' if count else f'New session "{name}".'
    return f"{opening} Ctrl-C stops a response; Ctrl-D or /exit quits."


def converse(state: CliState, agent: Agent, name: str, renderer: Renderer) -> None:
    """The read-respond loop, on one event loop for the whole chat (so a provider's HTTP
    client and a session store's connections live across turns). The session ``name`` is
    opened in the configured store (``[sessions] store``) before the first prompt."""
    from ..errors import TetherError

    with asyncio.Runner() as runner:
        existed = runner.run(agent.session_store().exists(name))
        try:
            session = runner.run(agent.named_session())
            assert session is not None
            report = getattr(session, "repair_report", None)
            if report:
                renderer.notice(f'Session "{name}" was repaired on load: {report.summary()}.')
            renderer.notice(_greeting(name, session))
            runner.run(check_provider(agent))
            while True:
                try:
                    line = read_line(PROMPT)
                except KeyboardInterrupt:
                    renderer.interrupted()
                    renderer.notice("(Ctrl-D or /exit quits)")
                    continue
                if line is None or line.strip() in EXIT_WORDS:
                    break
                if not line.strip():
                    continue
                try:
                    result = runner.run(stream_run(agent, line, renderer))
                    exit_status(result, renderer)
                except KeyboardInterrupt:
                    renderer.interrupted()
                    renderer.notice("Cancelled.")
                except TetherError as exc:
                    report_error(state, renderer, exc)
        finally:
            runner.run(agent.aclose())
            if not existed:
                runner.run(_drop_if_empty(agent, name))


async def _drop_if_empty(agent: Agent, name: str) -> None:
    """A chat that failed before its first message leaves no empty session behind."""
    from ..sessions import close_session

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
    tether.toml). Ctrl-C stops the current response; Ctrl-D or /exit quits.
    """
    from .render import make_renderer

    renderer = make_renderer()
    agent = build_agent(
        state,
        model=model,
        system=system,
        tools=parse_tool_names(tools),
        max_turns=max_turns,
        session=session_name,
    )
    converse(state, agent, session_name, renderer)
    renderer.finish_line()
    if sys.stdin.isatty():
        click.echo()
