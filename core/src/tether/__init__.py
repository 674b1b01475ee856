"""tether: a small, plugin-based agent harness.

``import tether`` is cheap: the names below are imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl
from .relocated import install as _install_relocated

_install_relocated()

if TYPE_CHECKING:
    from .agent import Agent as Agent
    from .cancel import CancelToken as CancelToken
    from .config import Config as Config
    from .config import LimitsConfig as LimitsConfig
    from .config import load_config as load_config
    from .errors import AuthenticationError as AuthenticationError
    from .errors import CompactionError as CompactionError
    from .errors import ConfigError as ConfigError
    from .errors import ContextOverflowError as ContextOverflowError
    from .errors import CostBudgetExceeded as CostBudgetExceeded
    from .errors import CrossSessionMemoryError as CrossSessionMemoryError
    from .errors import DepthExceeded as DepthExceeded
    from .errors import DuplicateComponentError as DuplicateComponentError
    from .errors import InvalidImageError as InvalidImageError
    from .errors import InvalidRequestError as InvalidRequestError
    from .errors import InvalidToolArguments as InvalidToolArguments
    from .errors import KnowledgeBackendError as KnowledgeBackendError
    from .errors import LimitExceeded as LimitExceeded
    from .errors import LoopDetected as LoopDetected
    from .errors import MaxTurnsExceeded as MaxTurnsExceeded
    from .errors import MemoryWriteRejected as MemoryWriteRejected
    from .errors import NeedsHuman as NeedsHuman
    from .errors import OutputValidationError as OutputValidationError
    from .errors import OverloadedError as OverloadedError
    from .errors import PermissionDeniedError as PermissionDeniedError
    from .errors import PluginError as PluginError
    from .errors import PluginLoadError as PluginLoadError
    from .errors import ProviderConnectionError as ProviderConnectionError
    from .errors import ProviderError as ProviderError
    from .errors import ProviderTimeoutError as ProviderTimeoutError
    from .errors import RateLimitError as RateLimitError
    from .errors import RefusalError as RefusalError
    from .errors import RetryBudgetExceeded as RetryBudgetExceeded
    from .errors import RunCancelled as RunCancelled
    from .errors import ServerError as ServerError
    from .errors import SessionBusyError as SessionBusyError
    from .errors import SessionConflictError as SessionConflictError
    from .errors import SessionDeadlineExceeded as SessionDeadlineExceeded
    from .errors import SessionError as SessionError
    from .errors import SessionLockedError as SessionLockedError
    from .errors import SessionTimeoutError as SessionTimeoutError
    from .errors import TetherError as TetherError
    from .errors import TokenBudgetExceeded as TokenBudgetExceeded
    from .errors import ToolDenied as ToolDenied
    from .errors import ToolError as ToolError
    from .errors import ToolTimeoutError as ToolTimeoutError
    from .errors import UnknownComponentError as UnknownComponentError
    from .errors import UnknownProviderError as UnknownProviderError
    from .errors import UnknownToolError as UnknownToolError
    from .errors import UnreadableCommand as UnreadableCommand
    from .errors import WallTimeExceeded as WallTimeExceeded
    from .errors import error_class_for_status as error_class_for_status
    from .errors import error_for_status as error_for_status
    from .events import CacheWarning as CacheWarning
    from .events import Compaction as Compaction
    from .events import Done as Done
    from .events import Nested as Nested
    from .events import PartialOutput as PartialOutput
    from .events import PlanUpdate as PlanUpdate
    from .events import Reflection as Reflection
    from .events import Retry as Retry
    from .events import RunAborted as RunAborted
    from .events import RunEvent as RunEvent
    from .events import RunStart as RunStart
    from .events import SessionRepaired as SessionRepaired
    from .events import StepEnd as StepEnd
    from .events import StepStart as StepStart
    from .events import TextDelta as TextDelta
    from .events import ThinkingDelta as ThinkingDelta
    from .events import ToolEnd as ToolEnd
    from .events import ToolProgress as ToolProgress
    from .events import ToolStart as ToolStart
    from .events import TurnEnd as TurnEnd
    from .events import event_to_dict as event_to_dict
    from .messages import ImageBlock as ImageBlock
    from .messages import Message as Message
    from .messages import StopReason as StopReason
    from .messages import TextBlock as TextBlock
    from .messages import Usage as Usage
    from .plugins import PluginManager as PluginManager
    from .provider import BaseProvider as BaseProvider
    from .provider import CostBreakdown as CostBreakdown
    from .provider import ModelCapabilities as ModelCapabilities
    from .provider import ModelInfo as ModelInfo
    from .provider import ModelRequest as ModelRequest
    from .provider import ModelResponse as ModelResponse
    from .provider import OutputSchema as OutputSchema
    from .provider import Pricing as Pricing
    from .provider import Provider as Provider
    from .provider import ProviderEvent as ProviderEvent
    from .provider import ThinkingConfig as ThinkingConfig
    from .provider import ToolCallReady as ToolCallReady
    from .provider import ToolDefinition as ToolDefinition
    from .registry import CommandRegistrar as CommandRegistrar
    from .registry import CompactionStrategyRegistrar as CompactionStrategyRegistrar
    from .registry import EmbedderRegistrar as EmbedderRegistrar
    from .registry import KnowledgeBackendRegistrar as KnowledgeBackendRegistrar
    from .registry import ObserverRegistrar as ObserverRegistrar
    from .registry import ProviderRegistrar as ProviderRegistrar
    from .registry import Registrar as Registrar
    from .registry import Registration as Registration
    from .registry import SessionStoreRegistrar as SessionStoreRegistrar
    from .registry import SkillRegistrar as SkillRegistrar
    from .registry import StrategyRegistrar as StrategyRegistrar
    from .registry import ToolRegistrar as ToolRegistrar
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
    "AuthenticationError": "errors",
    "BaseProvider": "provider",
    "CacheWarning": "events",
    "CommandRegistrar": "registry",
    "Compaction": "events",
    "CompactionError": "errors",
    "CompactionStrategyRegistrar": "registry",
    "ConfigError": "errors",
    "ContextOverflowError": "errors",
    "CrossSessionMemoryError": "errors",
    "KnowledgeBackendError": "errors",
    "KnowledgeBackendRegistrar": "registry",
    "CostBreakdown": "provider",
    "CostBudgetExceeded": "errors",
    "DepthExceeded": "errors",
    "Done": "events",
    "DuplicateComponentError": "errors",
    "EmbedderRegistrar": "registry",
    "InvalidImageError": "errors",
    "InvalidRequestError": "errors",
    "InvalidToolArguments": "errors",
    "LimitExceeded": "errors",
    "LoopDetected": "errors",
    "MaxTurnsExceeded": "errors",
    "MemoryWriteRejected": "errors",
    "ModelCapabilities": "provider",
    "ModelInfo": "provider",
    "ModelRequest": "provider",
    "ModelResponse": "provider",
    "NeedsHuman": "errors",
    "Nested": "events",
    "ObserverRegistrar": "registry",
    "OutputSchema": "provider",
    "OutputValidationError": "errors",
    "OverloadedError": "errors",
    "PartialOutput": "events",
    "PermissionDeniedError": "errors",
    "PlanUpdate": "events",
    "PluginError": "errors",
    "PluginLoadError": "errors",
    "PluginManager": "plugins",
    "Pricing": "provider",
    "Provider": "provider",
    "ProviderConnectionError": "errors",
    "ProviderError": "errors",
    "ProviderEvent": "provider",
    "ProviderRegistrar": "registry",
    "ProviderTimeoutError": "errors",
    "RateLimitError": "errors",
    "Reflection": "events",
    "RefusalError": "errors",
    "Registrar": "registry",
    "Registration": "registry",
    "Retry": "events",
    "RetryBudgetExceeded": "errors",
    "RunAborted": "events",
    "RunCancelled": "errors",
    "RunEvent": "events",
    "RunStart": "events",
    "ServerError": "errors",
    "SessionBusyError": "errors",
    "SessionConflictError": "errors",
    "SessionDeadlineExceeded": "errors",
    "SessionError": "errors",
    "SessionLockedError": "errors",
    "SessionTimeoutError": "errors",
    "SessionRepaired": "events",
    "SessionStoreRegistrar": "registry",
    "SkillRegistrar": "registry",
    "StepEnd": "events",
    "StepStart": "events",
    "StrategyRegistrar": "registry",
    "TetherError": "errors",
    "TextDelta": "events",
    "ThinkingConfig": "provider",
    "ThinkingDelta": "events",
    "TokenBudgetExceeded": "errors",
    "ToolCallReady": "provider",
    "ToolDefinition": "provider",
    "ToolDenied": "errors",
    "ToolEnd": "events",
    "ToolError": "errors",
    "ToolProgress": "events",
    "ToolRegistrar": "registry",
    "ToolStart": "events",
    "ToolTimeoutError": "errors",
    "TurnEnd": "events",
    "UnknownComponentError": "errors",
    "UnknownProviderError": "errors",
    "UnknownToolError": "errors",
    "UnreadableCommand": "errors",
    "WallTimeExceeded": "errors",
    "error_class_for_status": "errors",
    "error_for_status": "errors",
    "event_to_dict": "events",
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
    "AuthenticationError",
    "BaseProvider",
    "CacheWarning",
    "CancelToken",
    "CommandRegistrar",
    "Compaction",
    "CompactionError",
    "CompactionStrategyRegistrar",
    "Config",
    "ConfigError",
    "ContextOverflowError",
    "CostBreakdown",
    "CostBudgetExceeded",
    "CrossSessionMemoryError",
    "DepthExceeded",
    "Done",
    "DuplicateComponentError",
    "EmbedderRegistrar",
    "ImageBlock",
    "InMemorySession",
    "InvalidImageError",
    "InvalidRequestError",
    "InvalidToolArguments",
    "JsonlSession",
    "KnowledgeBackendError",
    "KnowledgeBackendRegistrar",
    "LimitExceeded",
    "LimitsConfig",
    "LoopDetected",
    "MaxTurnsExceeded",
    "MemoryWriteRejected",
    "Message",
    "ModelCapabilities",
    "ModelInfo",
    "ModelRequest",
    "ModelResponse",
    "NeedsHuman",
    "Nested",
    "ObserverRegistrar",
    "Outcome",
    "OutputSchema",
    "OutputValidationError",
    "OverloadedError",
    "PartialOutput",
    "PermissionDeniedError",
    "PlanUpdate",
    "PluginError",
    "PluginLoadError",
    "PluginManager",
    "Pricing",
    "Provider",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderEvent",
    "ProviderRegistrar",
    "ProviderTimeoutError",
    "RateLimitError",
    "Reflection",
    "RefusalError",
    "Registrar",
    "Registration",
    "Retry",
    "RetryBudgetExceeded",
    "RetryPolicy",
    "RunAborted",
    "RunCancelled",
    "RunEvent",
    "RunResult",
    "RunStart",
    "ServerError",
    "SessionBusyError",
    "SessionConflictError",
    "SessionDeadlineExceeded",
    "SessionError",
    "SessionLockedError",
    "SessionRepaired",
    "SessionStoreRegistrar",
    "SessionTimeoutError",
    "SkillRegistrar",
    "StepEnd",
    "StepStart",
    "StopReason",
    "StrategyRegistrar",
    "TetherError",
    "TextBlock",
    "TextDelta",
    "ThinkingConfig",
    "ThinkingDelta",
    "TokenBudgetExceeded",
    "Tool",
    "ToolCallReady",
    "ToolContext",
    "ToolDefinition",
    "ToolDenied",
    "ToolEnd",
    "ToolError",
    "ToolProgress",
    "ToolRegistrar",
    "ToolStart",
    "ToolTimeoutError",
    "Toolset",
    "TurnEnd",
    "UnknownComponentError",
    "UnknownProviderError",
    "UnknownToolError",
    "UnreadableCommand",
    "Usage",
    "WallTimeExceeded",
    "__version__",
    "error_class_for_status",
    "error_for_status",
    "event_to_dict",
    "hookimpl",
    "load_config",
    "tool",
]


_RENAMED = {
    "MemoryBackendError": "KnowledgeBackendError",
    "MemoryBackendRegistrar": "KnowledgeBackendRegistrar",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        from .renamed import renamed

        return renamed(__name__, name, _RENAMED)
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
