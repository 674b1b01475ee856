"""The local run log: a summary and the scrubbed events of every run, in SQLite.

Every run an :class:`~tether.Agent` makes is recorded (model, turns, tool calls, tokens,
cost, time, outcome, errors, and its events: model calls, tool calls with arguments and
results, retries, compactions) in ``runs.sqlite`` in the data directory, unless turned
off. ``tether runs``, ``tether trace RUN`` and ``tether stats`` read it.

Where and whether, first match wins:

1. ``TETHER_RUN_LOG``: ``off`` (or ``0``, ``false``, ``no``) records nothing; any other
   value is the path of the file;
2. ``[observers.runlog]`` in ``tether.toml``: ``enabled = false``, or ``path = "..."``;
3. ``<data dir>/runs.sqlite``.

Secrets (:func:`tether.scrub.scrub`: API keys tether resolved or was configured with,
secret-named environment variables, credential-shaped strings) are replaced by ``***``
before anything is written; long texts are cut to
:data:`~tether.runlog.recorder.MAX_TEXT` characters.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import Config, data_dir
from ..errors import ConfigError
from .recorder import MAX_TEXT, RunRecorder
from .store import RunLog, RunNotFound, RunRow, open_run_log

__all__ = [
    "MAX_TEXT",
    "RunLog",
    "RunNotFound",
    "RunRecorder",
    "RunRow",
    "open_run_log",
    "recorder_for",
    "run_log_path",
]

_OFF = {"off", "0", "false", "no"}


def run_log_path(config: Config, settings: Mapping[str, Any] | None = None) -> Path | None:
    """The run log file for ``config`` (see the module docstring), or ``None`` when off."""
    env = os.environ.get("TETHER_RUN_LOG")
    if env:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    section = dict(config.observers.get("runlog", {}) if settings is None else settings)
    unknown = sorted(set(section) - {"enabled", "path"})
    if unknown:
        raise ConfigError(
            f"[observers.runlog]: unknown key {', '.join(repr(k) for k in unknown)}. "
            "Valid keys: enabled, path."
        )
    if section.get("enabled", True) is False:
        return None
    if section.get("path"):
        return Path(str(section["path"])).expanduser()
    return data_dir(config) / "runs.sqlite"


def recorder_for(settings: Mapping[str, Any], config: Config) -> RunRecorder | None:
    """The ``runlog`` observer factory: a recorder writing where :func:`run_log_path` says."""
    path = run_log_path(config, settings)
    if path is None:
        return None
    return RunRecorder(open_run_log(path))
