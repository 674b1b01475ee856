"""The local run log: a summary and the scrubbed events of every run, in SQLite.

When turned on, every run an :class:`~tether.Agent` makes is recorded (model, turns, tool
calls, tokens, cost, time, outcome, errors, and its events: model calls, tool calls with
arguments and results, retries, compactions) in ``runs.sqlite`` in the data directory.
``tether runs``, ``tether trace RUN`` and ``tether stats`` read it. The ``tether`` command
turns it on for the runs it makes; an application's agents record nothing unless it is
configured. Denying the plugin (``TETHER_PLUGINS_DENY=runlog``) turns it off everywhere.

Where and whether, first match wins:

1. ``TETHER_RUN_LOG``: ``off`` (or ``0``, ``false``, ``no``) records nothing; ``on`` (or
   ``1``, ``true``, ``yes``) records to the default file; any other value is the path of
   the file;
2. ``[observers.runlog]`` in ``tether.toml``: ``enabled = true`` (the default file),
   ``enabled = false``, or ``path = "..."`` (on, to that file);
3. otherwise nothing is recorded.

The default file is ``<data dir>/runs.sqlite``.

Secrets (:func:`tether.scrub.scrub`: API keys tether resolved or was configured with,
secret-named environment variables, credential-shaped strings) are replaced by ``***``
before anything is written; long texts are cut to
:data:`~tether_runlog.recorder.MAX_TEXT` characters.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import ConfigError

if TYPE_CHECKING:
    from tether.config import Config

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
_ON = {"on", "1", "true", "yes"}


def run_log_path(config: Config, settings: Mapping[str, Any] | None = None) -> Path | None:
    """The run log file for ``config`` (see the module docstring), or ``None`` when off."""
    env = os.environ.get("TETHER_RUN_LOG")
    if env:
        word = env.strip().lower()
        if word in _OFF:
            return None
        if word not in _ON:
            return Path(env).expanduser()
        return _default_file(config)
    section = dict(config.observers.get("runlog", {}) if settings is None else settings)
    unknown = sorted(set(section) - {"enabled", "path"})
    if unknown:
        raise ConfigError(
            f"[observers.runlog]: unknown key {', '.join(repr(k) for k in unknown)}. "
            "Valid keys: enabled, path."
        )
    if section.get("enabled") is False:
        return None
    if section.get("path"):
        return Path(str(section["path"])).expanduser()
    if section.get("enabled") is True:
        return _default_file(config)
    return None


def _default_file(config: Config) -> Path:
    from tether.config import data_dir

    path: Path = data_dir(config) / "runs.sqlite"
    return path


def recorder_for(settings: Mapping[str, Any], config: Config) -> RunRecorder | None:
    """The ``runlog`` observer factory: a recorder writing where :func:`run_log_path` says."""
    path = run_log_path(config, settings)
    if path is None:
        return None
    from .recorder import RunRecorder
    from .store import open_run_log

    return RunRecorder(open_run_log(path))


_LAZY = {
    "MAX_TEXT": "recorder",
    "RunRecorder": "recorder",
    "RunLog": "store",
    "RunNotFound": "store",
    "RunRow": "store",
    "open_run_log": "store",
}


def __getattr__(name: str) -> Any:
    """The recorder and the store, imported on first use (``tether runs --help`` stays
    light)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
