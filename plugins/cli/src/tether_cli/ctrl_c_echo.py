"""Keeping the terminal from echoing ``^C`` over a streaming answer.

A terminal echoes Ctrl-C as the two characters ``^C`` where its cursor is. While an
answer streams, rich redraws the open Markdown block line by line, each line padded to
the terminal's width, so the cursor waits at the last column: the echoed ``^C`` wraps
to a new line, and the final redraw (which counts lines from where it left the cursor)
lands one line low, showing the answer's first line twice. :func:`quiet_ctrl_c` turns
the echo of control characters off (``ECHOCTL``) while a run streams; Ctrl-C still
sends SIGINT, and the renderer ends the line itself.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

__all__ = ["quiet_ctrl_c"]


def _terminal_fd() -> int | None:
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return stream.fileno()
        except (AttributeError, ValueError, OSError):
            continue
    return None


def quiet_ctrl_c() -> Callable[[], None]:
    """Stop the controlling terminal (if a standard stream is one) from echoing control
    characters; returns a function restoring the previous setting (safe to call twice,
    and a no-op where there is no terminal or no ``termios``)."""
    fd = _terminal_fd()
    if fd is None:
        return lambda: None
    try:
        import termios
    except ImportError:  # Windows
        return lambda: None
    try:
        before = termios.tcgetattr(fd)
    except termios.error:
        return lambda: None
    echoctl = getattr(termios, "ECHOCTL", 0)
    if not echoctl or not before[3] & echoctl:
        return lambda: None
    quiet = list(before)
    quiet[3] = before[3] & ~echoctl
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        return lambda: None
    restored = False

    def restore() -> None:
        nonlocal restored
        if restored:
            return
        restored = True
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, before)

    return restore
