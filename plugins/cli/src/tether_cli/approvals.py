"""``tether approvals``: the tool calls a suspended run of a session waits on, and deciding them.

A run with no one to ask (no terminal) suspends when a call needs approval: nothing is
run, and the session ends with the waiting calls. ``tether approvals list -s NAME``
shows them; ``tether approvals approve -s NAME [CALL_ID ...]`` and ``deny`` decide
them and resume the run at once (approved calls run, denied ones are answered with the
denial, which the model sees). Without CALL_IDs the decision is for every waiting call;
named calls are decided and the others must be decided in the same command
(``--deny-others`` / ``--approve-others``), since a run resumes only with every call
decided. Give the same ``--tools`` (and model) as the run had: the calls run with them.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

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
from .terminal_text import neutralize

if TYPE_CHECKING:
    from tether.messages import Message, ToolCallBlock
    from tether.sessions import SessionBackend

__all__ = ["approvals", "pending_calls", "waiting_hint"]


def pending_calls(messages: list[Message]) -> list[ToolCallBlock]:
    """The calls a suspended run at the end of ``messages`` waits on (empty if none)."""
    from tether.approvals import pending_of

    found = pending_of(messages)
    if found is None:
        return []
    calls, waiting = found
    return [call for call in calls if call.id in waiting]


def waiting_hint(name: str) -> str:
    """How to list and decide the calls session ``name`` waits on."""
    return (
        f"List them with `tether approvals list -s {name}`; run or refuse them (and resume "
        f"the run) with `tether approvals approve -s {name}` or `tether approvals deny -s {name}`."
    )


def _describe(call: ToolCallBlock) -> str:
    arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
    return neutralize(f"{call.id}  {call.name}({arguments})")


@click.group("approvals")
def approvals() -> None:
    """Tool calls a suspended run waits on: list, approve or deny them (and resume)."""


@approvals.command("list")
@click.option("-s", "--session", "session_name", required=True, help="The session's name.")
@pass_state
def list_pending(state: CliState, session_name: str) -> None:
    """List the calls waiting for approval in session NAME (call id, tool, arguments)."""
    from tether.sessions import close_session, open_session_backend

    async def read() -> list[ToolCallBlock]:
        store = open_session_backend(state.config(), state.plugin_manager())
        try:
            return await _pending_in(store)
        finally:
            await store.aclose()

    async def _pending_in(store: SessionBackend) -> list[ToolCallBlock]:
        if not await store.exists(session_name):
            raise click.ClickException(
                f'There is no session "{session_name}". `tether sessions list` shows them.'
            )
        session = await store.open(session_name, read_only=True)
        try:
            return pending_calls(list(session.messages))
        finally:
            await close_session(session)

    calls = asyncio.run(read())
    if not calls:
        click.echo(f'Nothing waits for approval in session "{session_name}".')
        return
    for call in calls:
        click.echo(_describe(call))


def _decide(
    state: CliState,
    approve: bool,
    session_name: str,
    call_ids: tuple[str, ...],
    others: bool | None,
    options: dict[str, Any],
) -> None:
    from tether.errors import TetherError

    from .render import make_renderer

    renderer = make_renderer()
    agent = build_agent(
        state,
        model=options["model"],
        system=options["system"],
        tools=parse_tool_names(options["tools"]),
        max_turns=options["max_turns"],
        session=session_name,
    )

    async def resume() -> int:
        try:
            await check_provider(agent)
            session = await open_named_session(agent, session_name)
            waiting = [call.id for call in pending_calls(list(session.messages))]
            if not waiting:
                raise click.ClickException(
                    f'Nothing waits for approval in session "{session_name}".'
                )
            unknown = [cid for cid in call_ids if cid not in waiting]
            if unknown:
                raise click.ClickException(
                    f'No waiting call {", ".join(unknown)} in session "{session_name}"; '
                    f"waiting: {', '.join(waiting)}."
                )
            chosen = set(call_ids or waiting)
            rest = [cid for cid in waiting if cid not in chosen]
            if rest and others is None:
                raise click.ClickException(
                    f"A run resumes only with every waiting call decided; also waiting: "
                    f"{', '.join(rest)}. Name them too, or add --approve-others or --deny-others."
                )
            decisions = {cid: approve if cid in chosen else bool(others) for cid in waiting}
            result = await stream_run(agent, "", renderer, session=session, decisions=decisions)
        except TetherError as exc:
            report_error(state, renderer, exc)
            return 1
        finally:
            await agent.aclose()
        return exit_status(result, renderer, session_name)

    click.get_current_context().exit(asyncio.run(resume()))


def _decision_command(name: str, approve: bool, summary: str) -> click.Command:
    @click.argument("call_ids", nargs=-1)
    @click.option("-s", "--session", "session_name", required=True, help="The session's name.")
    @click.option(
        "--approve-others/--deny-others",
        "others",
        default=None,
        help="Decide the waiting calls not named the other way.",
    )
    @model_options
    @pass_state
    def command(
        state: CliState,
        call_ids: tuple[str, ...],
        session_name: str,
        others: bool | None,
        **options: Any,
    ) -> None:
        _decide(state, approve, session_name, call_ids, others, options)

    command.__doc__ = summary
    return approvals.command(name)(command)


_decision_command(
    "approve",
    True,
    "Run the waiting calls CALL_IDS (all without any) of session NAME and resume the run.",
)
_decision_command(
    "deny",
    False,
    "Refuse the waiting calls CALL_IDS (all without any) of session NAME and resume the run.",
)
