"""``tether sessions``: list, show, repair and remove named sessions.

Sessions live in ``<data dir>/sessions`` (``TETHER_DATA_DIR`` or ``data_dir`` in the
configuration moves it); ``tether chat --session NAME`` creates and resumes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..scrub import scrub
from . import fail, pass_state

if TYPE_CHECKING:
    from ..messages import Message
    from ..sessions import SessionStore
    from . import CliState

__all__ = ["sessions"]


def _store(state: CliState) -> SessionStore:
    from ..sessions import SessionStore

    return SessionStore(config=state.config())


@click.group()
def sessions() -> None:
    """List, show, repair and remove saved chat sessions."""


@sessions.command("list")
@pass_state
def list_sessions(state: CliState) -> None:
    """List saved sessions, most recently used first."""
    store = _store(state)
    infos = store.list()
    if not infos:
        click.echo(f"No sessions in {store.root}. Start one with: tether chat --session NAME")
        return
    width = max(len(info.name) for info in infos)
    for info in infos:
        when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        click.echo(
            f"{info.name:<{width}}  {info.messages:>6} messages  {_size(info.size):>8}  {when}"
        )


@sessions.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the repaired history as JSON Lines.")
@pass_state
def show(state: CliState, name: str, as_json: bool) -> None:
    """Show the history of session NAME (read-only; works while it is in use)."""
    with _store(state).open(name, read_only=True) as session:
        if as_json:
            for message in session.messages:
                click.echo(scrub(message.to_json()))
            return
        click.echo(f"Session {name} ({session.id}): {len(session.messages)} messages")
        if session.repair_report:
            click.secho(
                f"Needs repair: {session.repair_report.summary()} (run `tether sessions repair {name}`)",
                fg="yellow",
            )
        for message in session.messages:
            click.echo(_render(message))


@sessions.command()
@click.argument("name")
@click.option("--dry-run", is_flag=True, help="Report what would change without writing anything.")
@pass_state
def repair(state: CliState, name: str, dry_run: bool) -> None:
    """Repair session NAME: drop damaged lines, restore the tool-call invariant.

    Repair also happens automatically whenever a session is opened for writing; this
    command shows what it does. The file is rewritten atomically.
    """
    store = _store(state)
    with store.open(name, read_only=True) as session:
        report = session.repair_report
    if not report:
        click.echo(f"Session {name} is intact; nothing to repair.")
        return
    for action in report.actions:
        click.echo(f"- {action}")
    if dry_run:
        click.echo(f"Dry run: {report.summary()}. Nothing was written.")
        return
    # Opening for writing stores the repaired history atomically (keeping a damaged original).
    with store.open(name) as session:
        report = session.repair_report
    click.echo(f"Repaired session {name}: {report.summary()}.")


@sessions.command("rm")
@click.argument("name")
@pass_state
def remove(state: CliState, name: str) -> None:
    """Delete session NAME."""
    from ..errors import SessionError

    try:
        _store(state).remove(name)
    except SessionError as exc:
        fail(str(exc))
    click.echo(f"Removed session {name}.")


def _render(message: Message) -> str:
    from ..messages import TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock

    parts = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            parts.append(
                f"-> {block.name}({_clip(str(block.raw_arguments or block.arguments), 200)}) [{block.id}]"
            )
        elif isinstance(block, ToolResultBlock):
            mark = "error" if block.is_error else "result"
            parts.append(f"<- {mark} [{block.call_id}]: {_clip(block.text, 300)}")
        elif isinstance(block, ThinkingBlock):
            parts.append(f"(thinking: {_clip(block.text, 120)})")
        else:
            parts.append(f"[{block.type}]")
    return f"{message.role:>9}: " + "\n           ".join(parts)


def _clip(text: str, limit: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
