"""What the ``tether`` process does around a command to start and end quickly.

Start: the cyclic garbage collector is paused while the command imports and builds what
it needs (tens of thousands of long-lived objects: classes, schemas, compiled patterns,
none of them garbage). :func:`resume_gc` turns it back on, once the model has started
answering (:func:`tether_cli.run.stream_run`) or at once for commands that do not run a
model; the objects made so far are moved to the permanent generation
(:func:`gc.freeze`), so later collections do not walk them again.

End: :func:`exit_now` ends the process without the interpreter's teardown of every
imported module (a sizeable part of a short ``tether run``). The exit handlers still
run (the run log's last rows, telemetry exporters, logging) and stdout and stderr are
flushed first, so nothing a command wrote or queued is lost. It does not apply when a
thread that is not a daemon is still running (the interpreter would wait for it), nor to
an exit code that is not a number; then the process exits the usual way.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

__all__ = ["exit_now", "pause_gc", "resume_gc"]

_paused = False


def pause_gc() -> None:
    """Pause the cyclic garbage collector (if it is on) until :func:`resume_gc`."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_gc() -> None:
    """Undo :func:`pause_gc`; does nothing when it did not pause the collector."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def exit_now(code: object) -> None:
    """End the process with ``code`` (a :class:`SystemExit` code) without the
    interpreter's teardown, when that is safe; otherwise return, and the caller exits
    the usual way."""
    status = 0 if code is None else code
    if not isinstance(status, int) or _other_threads_running():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe: the interpreter's own exit reports it
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        status = status or 120  # what the interpreter returns when its last flush fails
    os._exit(status)


def _other_threads_running() -> bool:
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())
