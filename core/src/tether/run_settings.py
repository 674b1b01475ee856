"""What every run of one agent shares: :class:`RunSettings`, built once by the Agent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .approvals import ApprovalCallback, Policy, SessionGrants
    from .boundary import ToolBoundary
    from .compaction import CompactionStrategy
    from .config import LimitsConfig
    from .events import RunEvent
    from .output import OutputSpec
    from .provider import ModelCapabilities, Provider, ThinkingConfig, ToolDefinition
    from .retry import RetryPolicy

__all__ = ["RunSettings"]


@dataclass(slots=True)
class RunSettings:
    """Everything a run needs that does not change between runs of one agent."""

    provider: Provider
    model: str
    model_string: str
    capabilities: ModelCapabilities
    system: str
    tools: dict[str, Any]
    tool_definitions: Sequence[ToolDefinition]
    tool_settings: dict[str, dict[str, Any]]
    parallel_tools: bool
    limits: LimitsConfig
    retry: RetryPolicy
    compaction: CompactionStrategy
    max_output_tokens: int | None
    temperature: float | None
    thinking: ThinkingConfig | None
    provider_settings: dict[str, Any]
    observers: Sequence[Callable[[RunEvent], None]]
    cwd: Any
    env: dict[str, str]
    refresh_system: Callable[[], str] | None = None
    """Called after a compaction for a new system prompt (e.g. a fresh memory snapshot)."""
    update_tools: Callable[[RunSettings], Awaitable[RunSettings | None]] | None = None
    """Awaited before every model call when the agent has dynamic toolsets: settings
    with the current tool list if it changed since these were built, else ``None``."""
    tool_versions: tuple[int, ...] = ()
    """The versions of the dynamic toolsets that ``tools`` reflects."""
    tool_boundary: ToolBoundary | None = None
    """Wraps every tool call (see :mod:`tether.boundary`)."""
    cache_warning: tuple[float, int] | None = (0.5, 5)
    """(hit-ratio threshold, minimum model calls) for a :class:`~tether.events.CacheWarning`;
    ``None`` turns it off."""
    output: OutputSpec | None = None
    """The structured output the run must end with (``Agent(output_type=...)``)."""
    stop_sequences: Sequence[str] = ()
    max_tokens_continuations: int = 0
    """How many times an answer cut off at the output limit is continued."""
    continuation_max_output_tokens: int | None = None
    """The output limit of continuation calls (the model's maximum when ``None``)."""
    policy: Policy | None = None
    approval: ApprovalCallback | None = None
    grants: SessionGrants | None = None
    toolsets: dict[str, str] = field(default_factory=dict)
    """Tool name → the toolset it came from (permission rules may name either)."""
    resolve_tools: Callable[[Sequence[str]], dict[str, Any]] | None = None
    """Tools by name for tool or toolset names (a loaded skill's tools)."""
    early_dispatch: bool = True
    """Start safe tool calls while the response streams (:mod:`tether.early_dispatch`)."""
    early_tools: dict[str, bool] = field(default_factory=dict)
    """Tool or toolset name → whether its calls may start early, over the tool's own flag."""
