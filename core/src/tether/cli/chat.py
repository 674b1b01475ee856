"""``tether chat``: an interactive conversation kept in a named session.

The session is a :class:`~tether.sessions.JsonlSession` in the
:class:`~tether.sessions.SessionStore` (``<data dir>/sessions/NAME.jsonl``), so quitting
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
    from ..sessions import JsonlSession
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


def _greeting(name: str, session: JsonlSession) -> str:
    count = len(session.messages)
    opening = f'Resumed session "{name}" ({count} messages).' if count else f'New session "{name}".'
    return f"{opening} Ctrl-C stops a response; Ctrl-D or /exit quits."


def converse(state: CliState, agent: Agent, session: JsonlSession, renderer: Renderer) -> None:
    """The read-respond loop, on one event loop for the whole chat (so a provider's HTTP
    client lives across turns)."""
    from ..errors import TetherError

    with asyncio.Runner() as runner:
        try:
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
                    result = runner.run(stream_run(agent, line, renderer, session=session))
                    exit_status(result, renderer)
                except KeyboardInterrupt:
                    renderer.interrupted()
                    renderer.notice("Cancelled.")
                except TetherError as exc:
                    report_error(state, renderer, exc)
        finally:
            runner.run(agent.aclose())


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
    from ..sessions import SessionStore
    from .render import make_renderer

    store = SessionStore(config=state.config())
    existed = store.exists(session_name)
    session = store.open(session_name)
    try:
        renderer = make_renderer()
        if session.repair_report:
            renderer.notice(
                f'Session "{session_name}" was repaired on load: {session.repair_report.summary()}.'
            )
        agent = build_agent(
            state,
            model=model,
            system=system,
            tools=parse_tool_names(tools),
            max_turns=max_turns,
            session=session,
        )
        renderer.notice(_greeting(session_name, session))
        converse(state, agent, session, renderer)
        renderer.finish_line()
        if sys.stdin.isatty():
            click.echo()
    finally:
        session.close()
        if not existed and not session.messages and store.exists(session_name):
            store.remove(session_name)  # a failed start leaves no empty session behind
