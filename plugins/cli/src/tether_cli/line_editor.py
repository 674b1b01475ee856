"""Reading the user's lines in ``tether chat``.

On a terminal (stdin and stdout both terminals) lines are read with prompt_toolkit: the
arrow keys move through the line and through earlier prompts, Alt-Enter (or Esc then
Enter) starts a new line within the same prompt, and Tab completes slash commands. The
history of each session is kept in ``<data dir>/chat-history/NAME`` (next to the
sessions, never inside one: it is what was typed, slash commands included, not the
conversation). When stdin is not a terminal (a pipe, a file) lines are read with
:func:`input`, one per prompt.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

__all__ = ["LineReader", "PlainLineReader", "TerminalLineReader", "history_file", "make_reader"]


class LineReader(Protocol):
    """Reads one line (or one multi-line entry) from the user."""

    def read(self, prompt: str, runner: asyncio.Runner) -> str | None:
        """The text entered; ``None`` at end of input (Ctrl-D). Ctrl-C raises
        :class:`KeyboardInterrupt`."""
        ...


class PlainLineReader:
    """:func:`input`, for stdin that is not a terminal."""

    def read(self, prompt: str, runner: asyncio.Runner) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            return None


class TerminalLineReader:
    """A prompt_toolkit line editor with a history file and slash-command completion."""

    def __init__(self, history: Path, commands: Iterable[str]) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings

        history.parent.mkdir(parents=True, exist_ok=True)
        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: object) -> None:
            event.current_buffer.insert_text("\n")  # type: ignore[attr-defined]

        completer = WordCompleter(sorted(commands), sentence=True, pattern=None)
        self._session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)),
            completer=completer,
            complete_while_typing=False,
            key_bindings=bindings,
            multiline=False,
            prompt_continuation=lambda width, line, wrapped: "." * (width - 1) + " ",
        )

    def read(self, prompt: str, runner: asyncio.Runner) -> str | None:
        try:
            return runner.run(self._session.prompt_async(prompt))
        except EOFError:
            return None


def history_file(data_dir: Path, session_name: str) -> Path:
    """Where the typed lines of chat session ``session_name`` are remembered."""
    return data_dir / "chat-history" / session_name


def make_reader(data_dir: Path, session_name: str, commands: Iterable[str]) -> LineReader:
    """A line editor when stdin and stdout are terminals, else plain :func:`input`."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return TerminalLineReader(history_file(data_dir, session_name), commands)
    return PlainLineReader()
