"""tether: a small, plugin-based agent harness.

``import tether`` is cheap: the names below are imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl

if TYPE_CHECKING:
    from .agent import Agent
    from .cancel import CancelToken
    from .config import Config, LimitsConfig, load_config
    from .messages import ImageBlock, Message, StopReason, TextBlock, Usage
    from .result import Outcome, RunResult
    from .runner import RetryPolicy
    from .sessions import InMemorySession, JsonlSession
    from .tools import Tool, ToolContext, Toolset, tool

__version__ = "0.1.0"

_LAZY = {
    "Agent": "agent",
    "CancelToken": "cancel",
    "Config": "config",
    "LimitsConfig": "config",
    "load_config": "config",
    "ImageBlock": "messages",
    "Message": "messages",
    "StopReason": "messages",
    "TextBlock": "messages",
    "Usage": "messages",
    "Outcome": "result",
    "RunResult": "result",
    "RetryPolicy": "runner",
    "InMemorySession": "sessions",
    "JsonlSession": "sessions",
    "Tool": "tools",
    "ToolContext": "tools",
    "Toolset": "tools",
    "tool": "tools",
}

__all__ = ["__version__", "hookimpl", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
