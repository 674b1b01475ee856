"""tether: a small, plugin-based agent harness.

``import tether`` is cheap: the names below are imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl

if TYPE_CHECKING:
    from .agent import Agent as Agent
    from .cancel import CancelToken as CancelToken
    from .config import Config as Config
    from .config import LimitsConfig as LimitsConfig
    from .config import load_config as load_config
    from .messages import ImageBlock as ImageBlock
    from .messages import Message as Message
    from .messages import StopReason as StopReason
    from .messages import TextBlock as TextBlock
    from .messages import Usage as Usage
    from .result import Outcome as Outcome
    from .result import RunResult as RunResult
    from .retry import RetryPolicy as RetryPolicy
    from .sessions import InMemorySession as InMemorySession
    from .sessions import JsonlSession as JsonlSession
    from .tools import Tool as Tool
    from .tools import ToolContext as ToolContext
    from .tools import Toolset as Toolset
    from .tools import tool as tool

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
    "RetryPolicy": "retry",
    "InMemorySession": "sessions",
    "JsonlSession": "sessions",
    "Tool": "tools",
    "ToolContext": "tools",
    "Toolset": "tools",
    "tool": "tools",
}

__all__ = [
    "Agent",
    "CancelToken",
    "Config",
    "ImageBlock",
    "InMemorySession",
    "JsonlSession",
    "LimitsConfig",
    "Message",
    "Outcome",
    "RetryPolicy",
    "RunResult",
    "StopReason",
    "TextBlock",
    "Tool",
    "ToolContext",
    "Toolset",
    "Usage",
    "__version__",
    "hookimpl",
    "load_config",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
