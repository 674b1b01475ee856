"""Text from a model, a tool, a session or a log, made safe to print on a terminal.

Such text is data. Printed raw, an escape sequence in it would be obeyed by the
terminal: ``ESC ] 0 ;`` sets the window title, ``ESC ] 52 ;`` writes the clipboard,
``ESC ] 8 ;`` hides a link behind innocent text, ``CSI`` sequences move the cursor and
erase what was shown, ``CR`` overwrites a line, and bidirectional overrides reorder
what the reader sees. :func:`neutralize` is the one function the CLI passes every such
string through before printing it: each control character is replaced by its visible
escape (``ESC`` becomes the six characters ``\\u001b``), so nothing is hidden and
nothing is obeyed.

What is replaced: C0 controls except newline and tab (a ``CR LF`` pair becomes a
newline), ``DEL``, C1 controls (``U+0080``-``U+009F``, which some terminals read as
``ESC`` sequences), the bidirectional embedding, override and isolate controls, and
lone surrogates (which cannot be encoded for output at all). The escapes use JSON's
``\\uXXXX`` spelling, so passing a JSON document through :func:`neutralize` leaves it
valid JSON with the same meaning.
"""

from __future__ import annotations

import re
from typing import Any

import click

__all__ = ["echo", "neutralize"]

_UNSAFE = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    return f"\\u{ord(char):04x}"


def neutralize(text: str) -> str:
    """``text`` with every control character that a terminal would obey (see the module
    docstring) replaced by its visible ``\\uXXXX`` escape. Newlines and tabs stay."""
    return _UNSAFE.sub(_visible, text)


def echo(message: Any = "", *, err: bool = False, nl: bool = True, **style: Any) -> None:
    """:func:`click.echo` (or :func:`click.secho` with ``style``) of a neutralized
    message: for lines that contain anything a model, tool, session or log wrote."""
    text = neutralize(str(message))
    if style:
        click.secho(text, err=err, nl=nl, **style)
    else:
        click.echo(text, err=err, nl=nl)
