"""Changing one top-level key of ``tether.toml`` from the command line.

Only the line of that key changes (or one line is added at the top), so comments and
layout survive. The edited text is parsed and validated before it replaces the file,
atomically; if the result would not read back as intended, nothing is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from tether.errors import ConfigError

__all__ = ["set_top_level_string", "writable_config_path"]

_TABLE = re.compile(r"^\s*\[", re.MULTILINE)


def writable_config_path(explicit: Path | None) -> Path:
    """The file ``tether models default`` writes: ``--config``, else the file the
    configuration is read from (``$TETHER_CONFIG``, ``./tether.toml``), else
    ``tether.toml`` in the user config directory (created when written)."""
    from tether.config import config_path

    if explicit is not None:
        return explicit
    found = config_path()
    if found is not None:
        return found
    import platformdirs

    return Path(platformdirs.user_config_dir("tether")) / "tether.toml"


def set_top_level_string(path: Path, key: str, value: str) -> None:
    """Set ``key = "value"`` at the top level of the TOML file ``path`` (created if
    missing). Raises :class:`~tether.errors.ConfigError` if the file is not valid TOML or
    the edit would not read back as exactly that change."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        before: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the file and try again.") from exc
    line = f"{key} = {json.dumps(value, ensure_ascii=False)}"
    first_table = _TABLE.search(text)
    head_end = first_table.start() if first_table else len(text)
    pattern = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=.*$", re.MULTILINE)
    match = pattern.search(text, 0, head_end)
    if match is not None:
        edited = text[: match.start()] + line + text[match.end() :]
    else:
        edited = f"{line}\n{text}"
    expected = {**before, key: value}
    try:
        after = tomllib.loads(edited)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise ConfigError(
            f"Cannot set {key} in {path} without rewriting more than that line (is `{key}` "
            f"spread over several lines?). Edit the file by hand: {line}"
        )
    from tether.config import parse_config

    parse_config(after, source=path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(edited)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
