"""The provider API: what a model-provider plugin implements and what the runner calls.

A provider turns a :class:`ModelRequest` (tether messages and tool definitions) into the
wire format of its API, streams the answer back as :data:`ProviderEvent` objects and ends
the stream with exactly one :class:`ModelResponse` holding the assembled assistant
message. Everything provider-specific (reasoning signatures, cache markers, role names,
error payloads) stays inside the plugin; the runner never branches on a provider.

Errors must be raised as :mod:`tether.errors` types (``RateLimitError`` with
``retry_after``, ``ContextOverflowError``, ...) so the runner can decide what to retry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeAlias, runtime_checkable

from .events import TextDelta, ThinkingDelta
from .messages import Message, StopReason, ToolCallBlock, Usage

__all__ = [
    "BaseProvider",
    "CostBreakdown",
    "ModelCapabilities",
    "ModelInfo",
    "ModelRequest",
    "ModelResponse",
    "OutputSchema",
    "Pricing",
    "Provider",
    "ProviderEvent",
    "ThinkingConfig",
    "ToolCallReady",
    "ToolDefinition",
]


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """Dollars spent on each kind of token; ``total`` is their sum."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: CostBreakdown) -> CostBreakdown:
        return CostBreakdown(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )


@dataclass(frozen=True, slots=True)
class Pricing:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """Cost of ``usage`` in dollars. Cached tokens are billed at their own rates
        when known and at the input rate otherwise."""
        return self.breakdown(usage).total

    def breakdown(self, usage: Usage) -> CostBreakdown:
        """Cost of ``usage`` in dollars, split by kind of token. ``input`` is the
        uncached input (``input_tokens`` counts cached tokens too)."""
        cache_read = self.cache_read if self.cache_read is not None else self.input
        cache_write = self.cache_write if self.cache_write is not None else self.input
        fresh = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
        return CostBreakdown(
            input=fresh * self.input / 1_000_000,
            output=usage.output_tokens * self.output / 1_000_000,
            cache_read=usage.cache_read_tokens * cache_read / 1_000_000,
            cache_write=usage.cache_write_tokens * cache_write / 1_000_000,
        )


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """What a model can do, as data. The runner adapts to these; it never tests names."""

    context_window: int = 128_000
    max_output_tokens: int = 8_192
    images_in_tool_results: bool = False
    vision: bool = False
    parallel_tool_calls: bool = True
    prompt_caching: bool = False
    thinking: bool = False
    pricing: Pricing | None = None
    structured_output: bool = False
    """The provider can constrain answers to a JSON schema (:attr:`ModelRequest.output_schema`).
    Models without it are asked for structured output through a final-answer tool."""

    def updated(self, overrides: Mapping[str, Any]) -> ModelCapabilities:
        """A copy with ``overrides`` applied (e.g. from the ``[providers.X.models]`` config)."""
        from .errors import ConfigError

        values = dict(overrides)
        unknown = sorted(set(values) - set(self.__dataclass_fields__))
        if unknown:
            raise ConfigError(
                f"Unknown model setting(s) {', '.join(unknown)}. "
                f"Valid: {', '.join(sorted(self.__dataclass_fields__))}."
            )
        if isinstance(values.get("pricing"), Mapping):
            try:
                values["pricing"] = Pricing(**values["pricing"])
            except TypeError as exc:
                raise ConfigError(
                    f"Invalid pricing {dict(values['pricing'])}: {exc}. "
                    "Use input, output, cache_read, cache_write (dollars per million tokens)."
                ) from None
        return replace(self, **values)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One entry of a provider's model catalogue."""

    id: str
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """Native structured output: the answer must be JSON matching ``schema``.

    ``strict`` is true when the schema meets strict-mode rules (every object closed and
    every property required), so providers with a strict switch may turn it on.
    """

    name: str
    schema: Mapping[str, Any]
    strict: bool = False
    description: str = ""


@dataclass(frozen=True, slots=True)
class ThinkingConfig:
    """Ask for visible reasoning. ``budget_tokens`` or ``effort`` ("low"/"medium"/"high")."""

    budget_tokens: int | None = None
    effort: str | None = None


@dataclass(slots=True)
class ModelRequest:
    """Everything a provider needs for one call.

    ``model`` is the provider's own model id (no ``provider/`` prefix). ``messages`` never
    contains system messages: the system prompt is ``system``. ``session_id`` is a stable
    key for the conversation that providers may use as a prompt-cache key.
    ``settings`` carries provider-specific options from configuration, untouched.
    ``output_schema`` is set only for models whose capabilities say
    ``structured_output``: the provider sends it in its native JSON-schema form.
    """

    model: str
    messages: Sequence[Message]
    system: str = ""
    tools: Sequence[ToolDefinition] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
    stop_sequences: Sequence[str] = ()
    thinking: ThinkingConfig | None = None
    session_id: str | None = None
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    settings: Mapping[str, Any] = field(default_factory=dict)
    output_schema: OutputSchema | None = None


@dataclass(slots=True)
class ModelResponse:
    """The end of one streamed response: the assembled assistant message and its facts.

    ``message.meta.model`` must be set to ``"<provider>/<model>"``.
    """

    message: Message
    stop_reason: StopReason
    usage: Usage
    model: str


@dataclass(slots=True)
class ToolCallReady:
    """One tool call of the response being streamed is complete: no more of it will come.

    Optional: a provider that never yields it works as before. One that does yields it
    the moment its wire format says the call is whole (its arguments fully sent), with
    ``call`` exactly as it will appear in the final message (same ``id``, ``name`` and
    ``arguments``), and ``index`` its position among the response's tool calls
    (0, 1, 2, ... in the order the message will list them). Announce calls in that order,
    each at most once. The runner may then start a call of a tool marked safe to start
    early before the response ends (see the tools documentation, "Early dispatch").
    """

    call: ToolCallBlock
    index: int


ProviderEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallReady | ModelResponse


@runtime_checkable
class Provider(Protocol):
    """What a provider plugin's factory returns."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Send ``request`` and yield deltas as they arrive, then one ``ModelResponse``.

        Yield each delta as soon as the SDK produces it (no buffering), and a
        :class:`ToolCallReady` as soon as a tool call is complete, if the wire format
        says so before the end. Raise
        :mod:`tether.errors` types only; a failure after some deltas were yielded is
        raised like any other and the runner retries the whole call if it may.
        """
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The ``ModelResponse`` of :meth:`stream`, consuming it."""
        ...

    async def validate_auth(self) -> None:
        """Raise ``AuthenticationError`` (naming the variable to set) if credentials are
        missing or rejected. May make one cheap request."""
        ...

    def capabilities(self, model: str) -> ModelCapabilities:
        """Capabilities of ``model``; unknown models get conservative defaults."""
        ...

    def catalogue(self) -> Sequence[ModelInfo]:
        """The models this provider knows, for ``tether models``."""
        ...

    async def aclose(self) -> None:
        """Release HTTP clients and other resources."""
        ...


class BaseProvider:
    """Convenience base: ``complete`` over ``stream``, capabilities from a catalogue.

    Subclasses set ``name`` and ``models`` and implement :meth:`stream`.
    ``model_overrides`` (from configuration) patch catalogue entries or add new ones.
    """

    name: str = ""
    models: Sequence[ModelInfo] = ()
    default_capabilities: ModelCapabilities = ModelCapabilities()

    def __init__(self, *, model_overrides: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._overrides = dict(model_overrides or {})
        self._capabilities: dict[str, ModelCapabilities] = {}

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        raise NotImplementedError(f"{type(self).__name__} must implement stream()")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response: ModelResponse | None = None
        async for event in self.stream(request):
            if isinstance(event, ModelResponse):
                response = event
        if response is None:
            from .errors import ProviderError

            raise ProviderError(
                f"{self.name}: the stream ended without a response", provider=self.name
            )
        return response

    async def validate_auth(self) -> None:
        return None

    def catalogue(self) -> Sequence[ModelInfo]:
        known = {m.id for m in self.models}
        extra = [
            ModelInfo(id=model_id, capabilities=self.default_capabilities.updated(values))
            for model_id, values in self._overrides.items()
            if model_id not in known
        ]
        return [*self.models, *extra]

    def capabilities(self, model: str) -> ModelCapabilities:
        cached = self._capabilities.get(model)
        if cached is not None:
            return cached
        base = self.default_capabilities
        for info in self.models:
            if info.id == model or model in info.aliases:
                base = info.capabilities
                break
        else:
            # Dated snapshots ("gpt-4o-2024-08-06") inherit from the longest known prefix.
            prefixes = [m for m in self.models if model.startswith(m.id)]
            if prefixes:
                base = max(prefixes, key=lambda m: len(m.id)).capabilities
        overrides = self._overrides.get(model)
        caps = base.updated(overrides) if overrides else base
        self._capabilities[model] = caps
        return caps

    async def aclose(self) -> None:
        return None
