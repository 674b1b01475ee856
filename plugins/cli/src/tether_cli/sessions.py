"""``tether sessions``: list, show, repair and remove named sessions.

Sessions live in the store ``[sessions] store`` names (``jsonl`` by default: files in
``<data dir>/sessions``, which ``TETHER_DATA_DIR`` or ``data_dir`` in the configuration
moves), the one ``tether chat --session NAME`` creates and resumes them in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import click

from tether.scrub import scrub

from . import fail, pass_state
from .terminal_text import echo

if TYPE_CHECKING:
    from datetime import datetime

    from tether.messages import Message
    from tether.sessions import AnySession, SessionBackend

    from . import CliState

__all__ = ["sessions"]

T = TypeVar("T")


def _with_store(state: CliState, work: Callable[[SessionBackend], Awaitable[T]]) -> T:
    """Run ``work`` on the configured session store, closing the store afterwards."""
    from tether.errors import SessionError
    from tether.sessions import open_session_backend

    async def run() -> T:
        store = open_session_backend(state.config(), state.plugin_manager())
        try:
            return await work(store)
        finally:
            await store.aclose()

    try:
        return asyncio.run(run())
    except SessionError as exc:
        fail(str(exc))


def _where(state: CliState, store: SessionBackend) -> str:
    from tether.sessions import JsonlBackend

    if isinstance(store, JsonlBackend):
        return str(store.files.root)
    return f"the {state.config().sessions.store} session store"


@click.group()
def sessions() -> None:
    """List, show, repair and remove saved chat sessions (in the configured store)."""


@sessions.command("list")
@pass_state
def list_sessions(state: CliState) -> None:
    """List saved sessions, most recently used first."""
    from tether.sessions import JsonlBackend

    async def rows(store: SessionBackend) -> tuple[str, list[tuple[str, str, str, str]]]:
        if isinstance(store, JsonlBackend):  # the files also have a size
            infos = await asyncio.to_thread(store.files.list)
            listed = [(i.name, str(i.messages), _size(i.size), _when(i.modified)) for i in infos]
        else:
            summaries = await store.list()
            listed = [(s.name, str(s.messages), "", _when(s.modified)) for s in summaries]
        return _where(state, store), listed

    where, listed = _with_store(state, rows)
    if not listed:
        echo(f"No sessions in {where}. Start one with: tether chat --session NAME")
        return
    width = max(len(name) for name, *_ in listed)
    for name, messages, size, when in listed:
        size_column = f"  {size:>8}" if size else ""
        echo(f"{name:<{width}}  {messages:>6} messages{size_column}  {when}")


@sessions.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the repaired history as JSON Lines.")
@pass_state
def show(state: CliState, name: str, as_json: bool) -> None:
    """Show the history of session NAME (read-only; works while it is in use)."""
    from tether.sessions import RepairReport

    async def load(store: SessionBackend) -> tuple[str, list[Message], RepairReport]:
        session = await store.open(name, read_only=True)
        try:
            report = getattr(session, "repair_report", None) or RepairReport()
            return session.id, list(session.messages), report
        finally:
            await _close(session)

    session_id, messages, report = _with_store(state, load)
    if as_json:
        for message in messages:
            echo(scrub(message.to_json()))
        return
    echo(f"Session {name} ({session_id}): {len(messages)} messages")
    if report:
        echo(
            f"Needs repair: {report.summary()} (run `tether sessions repair {name}`)",
            fg="yellow",
        )
    for message in messages:
        echo(_render(message))


@sessions.command()
@click.argument("name")
@click.option("--dry-run", is_flag=True, help="Report what would change without writing anything.")
@pass_state
def repair(state: CliState, name: str, dry_run: bool) -> None:
    """Repair session NAME: drop damaged lines, restore the tool-call invariant.

    Repair also happens automatically whenever a session is opened for writing; this
    command shows what it does. The repaired history replaces the stored one atomically.
    """
    from tether.sessions import RepairReport

    async def report_of(store: SessionBackend, *, write: bool) -> RepairReport:
        session = await store.open(name, read_only=not write)
        try:
            return getattr(session, "repair_report", None) or RepairReport()
        finally:
            await _close(session)

    report = _with_store(state, lambda store: report_of(store, write=False))
    if not report:
        echo(f"Session {name} is intact; nothing to repair.")
        return
    for action in report.actions:
        echo(f"- {action}")
    if dry_run:
        echo(f"Dry run: {report.summary()}. Nothing was written.")
        return
    # Opening for writing stores the repaired history atomically (a JSONL store also
    # keeps the damaged original).
    report = _with_store(state, lambda store: report_of(store, write=True))
    echo(f"Repaired session {name}: {report.summary()}.")


@sessions.command("rm")
@click.argument("name")
@pass_state
def remove(state: CliState, name: str) -> None:
    """Delete session NAME."""
    _with_store(state, lambda store: store.remove(name))
    echo(f"Removed session {name}.")


async def _close(session: AnySession) -> None:
    from tether.sessions import close_session

    await close_session(session)


def _when(modified: datetime | None) -> str:
    return modified.astimezone().strftime("%Y-%m-%d %H:%M") if modified is not None else "-"


def _render(message: Message) -> str:
    from tether.messages import TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock

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
