"""``tether memory``: look at, edit and clear cross-session memory.

::

    tether memory show                  # user profile and this project's facts
    tether memory edit user             # open $EDITOR (or $VISUAL) on the user profile
    tether memory edit project          # ... on the facts of the current directory
    tether memory clear project --yes

Files live in ``<data_dir>/memory`` (``TETHER_DATA_DIR`` or ``data_dir`` in the
configuration). An edit is saved only if it passes the same checks as a write through the
``memory`` tool: the scanner and the character cap. A refused edit leaves the file as it
was and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from tether_cli import CliState, fail, pass_state
from tether_cli.terminal_text import echo

if TYPE_CHECKING:
    from tether_memory import CrossSessionMemory, MemoryFile

__all__ = ["memory"]

_project_option = click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project whose facts to use (default: the current directory).",
)


def _memory(state: CliState, project_dir: Path | None) -> CrossSessionMemory:
    from tether_memory import CrossSessionMemory

    return CrossSessionMemory(config=state.config(), project=project_dir or Path.cwd())


def _targets(memory: CrossSessionMemory, which: str) -> list[MemoryFile]:
    if which == "user":
        return [memory.store.user]
    if which == "project":
        return [memory.store.file("project")]
    return memory.files()


@click.group()
def memory() -> None:
    """Show, edit or clear the memory carried across sessions."""


@memory.command()
@click.argument("which", type=click.Choice(["all", "user", "project"]), default="all")
@_project_option
@pass_state
def show(state: CliState, which: str, project_dir: Path | None) -> None:
    """Print the user profile and/or the project facts, with their sizes and paths."""
    mem = _memory(state, project_dir)
    for file in _targets(mem, which):
        title = "User profile" if file is mem.store.user else f"Project facts ({mem.store.project})"
        echo(f"{title} — {file.chars()}/{file.cap} characters", bold=True)
        echo(f"  {file.path}")
        entries = file.entries()
        if not entries:
            echo("  (empty)")
        for entry in entries:
            echo("- " + entry.replace("\n", "\n  "))
        echo()


@memory.command()
@click.argument("which", type=click.Choice(["user", "project"]), default="user")
@_project_option
@pass_state
def edit(state: CliState, which: str, project_dir: Path | None) -> None:
    """Edit a memory file in $EDITOR; saved only if it passes the scanner and the cap.

    Entries are separated by blank lines.
    """
    from tether.errors import MemoryWriteRejected

    file = _targets(_memory(state, project_dir), which)[0]
    current = file.read_text()
    edited = click.edit(current, extension=".md", require_save=True)
    if edited is None or edited == current:
        echo("No changes.")
        return
    try:
        result = file.replace_all(edited)
    except MemoryWriteRejected as exc:
        fail(f"{exc} The {file.label} at {file.path} is unchanged.")
    echo(f"Saved: {result.chars}/{result.cap} characters in {file.path}.")


@memory.command()
@click.argument("which", type=click.Choice(["all", "user", "project"]))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_project_option
@pass_state
def clear(state: CliState, which: str, yes: bool, project_dir: Path | None) -> None:
    """Delete every entry of the user profile, the project facts, or both."""
    files = _targets(_memory(state, project_dir), which)
    labels = " and ".join(f.label for f in files)
    if not yes and not click.confirm(f"Delete the {labels}?", default=False):
        echo("Nothing deleted.")
        return
    for file in files:
        file.clear()
    echo(f"Cleared the {labels}.")
