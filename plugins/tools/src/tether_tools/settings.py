"""Reading a tool's settings (``[tool_settings.<toolset>]`` overlaid by
``[tool_settings.<tool>]``) with types checked, so a typo in ``tether.toml`` surfaces as a
clear error naming the key instead of a crash deep inside a tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.errors import ConfigError

__all__ = [
    "get_bool",
    "get_choice",
    "get_int",
    "get_number",
    "get_str",
    "get_str_list",
    "get_str_map",
]


def _bad(tool: str, key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(
        f"[tool_settings.{tool}] {key} must be {expected}, got {value!r}. Fix it in tether.toml."
    )


def get_number(
    settings: Mapping[str, Any], tool: str, key: str, default: float, *, minimum: float = 0
) -> float:
    """A positive number setting (ints are accepted)."""
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise _bad(tool, key, f"a number >= {minimum:g}", value)
    return float(value)


def get_int(
    settings: Mapping[str, Any], tool: str, key: str, default: int, *, minimum: int = 1
) -> int:
    """A whole-number setting."""
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad(tool, key, f"a whole number >= {minimum}", value)
    return value


def get_bool(settings: Mapping[str, Any], tool: str, key: str, default: bool) -> bool:
    value = settings.get(key, default)
    if not isinstance(value, bool):
        raise _bad(tool, key, "true or false", value)
    return value


def get_str(
    settings: Mapping[str, Any], tool: str, key: str, default: str | None = None
) -> str | None:
    value = settings.get(key, default)
    if value is not None and not isinstance(value, str):
        raise _bad(tool, key, "a string", value)
    return value


def get_choice(
    settings: Mapping[str, Any], tool: str, key: str, choices: tuple[str, ...], default: str
) -> str:
    """A setting that must be one of ``choices``."""
    value = settings.get(key, default)
    if value not in choices:
        raise _bad(tool, key, "one of " + ", ".join(f'"{c}"' for c in choices), value)
    return str(value)


def get_str_list(settings: Mapping[str, Any], tool: str, key: str) -> list[str]:
    value = settings.get(key, [])
    if (
        isinstance(value, str)
        or not isinstance(value, list | tuple)
        or not all(isinstance(v, str) for v in value)
    ):
        raise _bad(tool, key, "a list of strings", value)
    return list(value)


def get_str_map(settings: Mapping[str, Any], tool: str, key: str) -> dict[str, str]:
    value = settings.get(key, {})
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _bad(tool, key, "a table of string values", value)
    return dict(value)
