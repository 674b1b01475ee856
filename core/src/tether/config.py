"""Configuration: ``tether.toml`` plus environment variables.

Lookup order for the file: ``$TETHER_CONFIG`` if set, else ``./tether.toml``, else
``tether.toml`` in the user config directory (``platformdirs.user_config_dir("tether")``).
No file is fine: every setting has a default. Environment variables override the file:
``TETHER_MODEL`` (default model) and ``TETHER_DATA_DIR`` (sessions, memory, indexes).

An example with every section::

    model = "anthropic/claude-sonnet-4-5"      # swap providers by changing this line
    tools = ["fs", "shell"]

    [aliases]
    fast = "openai/gpt-4.1-mini"

    [providers.anthropic]
    api_key_env = "ANTHROPIC_API_KEY"          # the default; never put keys in this file
    base_url = "https://gateway.example/anthropic"
    timeout = 120
    [providers.anthropic.models."claude-sonnet-4-5"]
    context_window = 1000000

    [tool_settings.shell]
    timeout = 60

    [limits]
    max_turns = 40
    max_cost_usd = 2.5

    [compaction]
    strategy = "summarize"
    threshold = 0.6

    [sessions]
    store = "jsonl"                            # or "sqlite", "postgres", "redis"
    settings = {}

    [knowledge]
    backend = "sqlite"                         # the knowledge base: backend, embedder, settings
    embedder = "local-minilm"

    [memory]
    cross_session = true                       # the user profile and project facts

    [cache]
    warn_below = 0.5                           # CacheWarning when a long run's hit ratio is lower
    warn_after_turns = 5

    [observers.runlog]                         # settings of an event observer, by its name
    enabled = false                            # opt out of the local run log

    [mcp.servers.github]                       # a table no core key claims: kept for plugins
    url = "https://mcp.example/github"

    [permissions]
    mode = "accept-edits"                       # default, read-only, ask, accept-edits
    [permissions.rules]
    "run_command(git status*)" = "allow"

    [output]
    stop_sequences = ["</answer>"]
    max_tokens_continuations = 2               # continue answers cut off at the limit

A malformed file or an unknown key raises :class:`~tether.errors.ConfigError` naming
the file and the key. Top-level *tables* that tether itself does not define (``[mcp]``
above) belong to plugins: they are kept, unvalidated, in :attr:`Config.sections` for the
plugin that reads them, unless the name is so close to a core key (``[limit]``) that it is
reported as a typo.

The knowledge base's keys (``backend``, ``embedder``, ``settings``) were once read from
``[memory]``; they still are, through 0.x, with a ``DeprecationWarning`` asking to move
them to ``[knowledge]`` (a key set in both places takes ``[knowledge]``'s value).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from .errors import ConfigError
from .scrub import register_secret, register_url_secrets, scrub

__all__ = [
    "CacheConfig",
    "CompactionConfig",
    "Config",
    "DurableConfig",
    "EarlyDispatchConfig",
    "KnowledgeConfig",
    "LimitsConfig",
    "MemoryConfig",
    "OutputConfig",
    "PermissionsConfig",
    "ProviderConfig",
    "SessionsConfig",
    "StrategyConfig",
    "config_path",
    "data_dir",
    "load_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderConfig(BaseModel):
    """Settings of one provider (``[providers.<name>]``).

    Plugins may accept more keys than these; unknown keys are kept in ``extra`` for them.
    """

    model_config = ConfigDict(extra="allow")

    api_key: SecretStr | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    timeout: float | None = None
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})

    def model_post_init(self, context: Any, /) -> None:
        register_url_secrets(self.base_url)
        if self.api_key is not None:
            register_secret(self.api_key.get_secret_value())

    def __repr__(self) -> str:
        return scrub(super().__repr__())

    def __str__(self) -> str:
        return scrub(super().__str__())

    def resolve_api_key(self, default_env: str) -> str | None:
        """The API key: explicit ``api_key``, else ``$api_key_env``, else ``$default_env``.

        The key is registered as a secret (:mod:`tether.scrub`): it is scrubbed from every
        message, log record, tool output and session line from then on."""
        if self.api_key is not None:
            key: str | None = self.api_key.get_secret_value()
        else:
            key = os.environ.get(self.api_key_env or default_env) or None
        register_secret(key)
        return key

    def key_variable(self, default_env: str) -> str:
        """The environment variable the key is read from (for error messages)."""
        return self.api_key_env or default_env


class LimitsConfig(_Strict):
    """Limits that end a run with a typed outcome instead of running away."""

    max_turns: int = Field(50, ge=1, description="Model calls per run.")
    max_total_tokens: int | None = Field(None, ge=1, description="Input+output tokens per run.")
    max_cost_usd: float | None = Field(None, gt=0, description="Dollars per run (needs pricing).")
    wall_time_s: float | None = Field(None, gt=0, description="Seconds per run.")
    loop_threshold: int = Field(
        3, ge=2, description="Identical failing tool calls in a row that count as a loop."
    )
    stream_idle_timeout_s: float | None = Field(
        120.0,
        gt=0,
        description="Seconds without a streamed event before a model call is retried.",
    )
    retry_budget_s: float | None = Field(
        300.0,
        gt=0,
        description="Seconds one model call may spend on attempts and waits between them.",
    )
    tool_timeout_s: float | None = Field(
        300.0,
        gt=0,
        description="Default timeout of a tool call, for tools that set none; None: no default.",
    )
    max_run_depth: int = Field(
        5, ge=1, description="Runs nested inside tools (sub-agents), counting the outermost."
    )
    max_tree_model_calls: int | None = Field(
        200,
        ge=1,
        description="Model calls of a run and every run it starts, read on the outermost run.",
    )


class CompactionConfig(_Strict):
    strategy: str = "summarize"
    threshold: float = Field(0.6, gt=0, le=1, description="Share of the context window.")
    settings: dict[str, Any] = Field(default_factory=dict)


class CacheConfig(_Strict):
    """When to warn that prompt caching is not paying off (:class:`~tether.events.CacheWarning`)."""

    warn_below: float = Field(
        0.5, ge=0, le=1, description="Hit ratio under which a long run warns; 0 turns it off."
    )
    warn_after_turns: int = Field(5, ge=1, description="Model calls before a run counts as long.")


class KnowledgeConfig(_Strict):
    """The knowledge base (``[knowledge]``): the backend a plugin registered under that
    name, the embedder for vector search (none: keywords only), and the settings both
    receive."""

    backend: str = "sqlite"
    embedder: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


KNOWLEDGE_KEYS = ("backend", "embedder", "settings")
"""The keys of :class:`KnowledgeConfig`, still read from ``[memory]`` through 0.x."""


class MemoryConfig(_Strict):
    """Cross-session memory (``[memory]``): whether the command line uses it
    (``cross_session``) and its hard caps, in characters."""

    cross_session: bool = Field(
        True, description="tether run/chat load the user profile and project facts."
    )
    user_cap: int = Field(1500, ge=1, description="Characters of the user profile.")
    project_cap: int = Field(2500, ge=1, description="Characters of the project facts.")


class SessionsConfig(_Strict):
    """Where named sessions live: ``store`` names a session store registered by a plugin
    (``jsonl`` and ``sqlite`` are built in; ``postgres`` and ``redis`` come with
    tether-postgres and tether-redis), ``settings`` are passed to it."""

    store: str = "jsonl"
    settings: dict[str, Any] = Field(default_factory=dict)


class DurableConfig(_Strict):
    """Durable runs on a workflow engine (``[durable]``). ``engine`` names the plugin
    that provides them (``dbos`` with tether-dbos); without one, runs happen in-process
    and nothing is checkpointed. ``settings`` go to the engine."""

    engine: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


class PermissionsConfig(_Strict):
    """Which tool calls run, ask first, or are refused (see :mod:`tether.approvals`)."""

    mode: str | None = Field(
        None, description="A named preset: default, read-only, ask, accept-edits."
    )
    rules: dict[str, str] = Field(
        default_factory=dict, description='Rule → allow/ask/deny, e.g. "write_file(docs/**)".'
    )


class OutputConfig(_Strict):
    """How answers end: stop sequences, continuation past the output limit, retries of
    invalid structured output."""

    stop_sequences: list[str] = Field(default_factory=list)
    max_tokens_continuations: int = Field(0, ge=0, description="Continuations of a cut-off answer.")
    continuation_max_output_tokens: int | None = Field(
        None, ge=1, description="Output limit of continuation calls (default: the model's maximum)."
    )
    retries: int = Field(
        2, ge=0, description="Invalid structured answers sent back for correction."
    )


class EarlyDispatchConfig(_Strict):
    """Starting safe tool calls while the model's response still streams
    (``[early_dispatch]``; see :mod:`tether.early_dispatch`)."""

    enabled: bool = Field(
        True, description="Start calls of read-only (or early-marked) tools as they arrive."
    )
    tools: dict[str, bool] = Field(
        default_factory=dict,
        description="Tool or toolset name → whether its calls may start early (overrides the tool).",
    )


class StrategyConfig(_Strict):
    """How agents work through a task (see :mod:`tether.strategies`)."""

    name: str = Field("react", description="react, plan-and-execute, reflexion, or a plugin's.")
    settings: dict[str, Any] = Field(default_factory=dict, description="Keyword settings for it.")


class Config(_Strict):
    """The whole configuration. Construct directly in code, or :func:`load_config`."""

    model: str | None = None
    system: str | None = None
    aliases: dict[str, str] = Field(default_factory=dict)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    tools: list[str] = Field(default_factory=list)
    tool_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    parallel_tools: bool = True
    early_dispatch: EarlyDispatchConfig = Field(default_factory=EarlyDispatchConfig)
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = None
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    knowledge: KnowledgeConfig = Field(default_factory=KnowledgeConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    observers: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Settings of event observers by name; `enabled = false` turns one off.",
    )
    durable: DurableConfig = Field(default_factory=DurableConfig)
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    strategy: StrategyConfig = Field(default_factory=StrategyConfig)
    data_dir: Path | None = None
    sections: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Top-level tables no core key claims (``[mcp]``), kept for plugins.",
    )

    source: Path | None = Field(None, exclude=True, description="The file this came from.")

    @model_validator(mode="before")
    @classmethod
    def _plugin_sections(cls, data: Any) -> Any:
        """Move top-level tables that are not core keys into ``sections``."""
        if not isinstance(data, Mapping):
            return data
        known = set(cls.model_fields)
        data = dict(data)
        sections = dict(data.get("sections") or {})
        for key in [k for k, v in data.items() if k not in known and isinstance(v, Mapping)]:
            if difflib.get_close_matches(key, known - {"sections", "source"}, n=1, cutoff=0.8):
                continue  # a typo of a core key: left for the unknown-key error
            sections[key] = dict(data.pop(key))
        if sections:
            data["sections"] = sections
        return data

    @model_validator(mode="before")
    @classmethod
    def _knowledge_from_memory(cls, data: Any) -> Any:
        """Move the knowledge base's keys of ``[memory]`` (their old place) to
        ``[knowledge]``, with a ``DeprecationWarning``."""
        if not isinstance(data, Mapping) or not isinstance(data.get("memory"), Mapping):
            return data
        memory = dict(data["memory"])
        moved = {key: memory.pop(key) for key in KNOWLEDGE_KEYS if key in memory}
        if not moved:
            return data
        import warnings

        keys = ", ".join(moved)
        warnings.warn(
            f"[memory] {keys}: the knowledge base is configured in [knowledge] now; move "
            f"{'it' if len(moved) == 1 else 'them'} there ([memory] is read for it until "
            "tether 1.0).",
            DeprecationWarning,
            stacklevel=2,
        )
        knowledge = data.get("knowledge")
        if knowledge is None:
            knowledge = moved
        elif isinstance(knowledge, Mapping):
            knowledge = {**moved, **knowledge}
        return {**data, "memory": memory, "knowledge": knowledge}

    def provider(self, name: str) -> ProviderConfig:
        return self.providers.get(name) or ProviderConfig()

    def section(self, name: str) -> dict[str, Any]:
        """The plugin table ``[name]`` (empty if the file has none)."""
        return self.sections.get(name, {})


def config_path() -> Path | None:
    """The configuration file that :func:`load_config` would read, if any exists."""
    explicit = os.environ.get("TETHER_CONFIG")
    if explicit:
        return Path(explicit)
    local = Path.cwd() / "tether.toml"
    if local.is_file():
        return local
    import platformdirs

    user = Path(platformdirs.user_config_dir("tether")) / "tether.toml"
    return user if user.is_file() else None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the configuration file (see the module docstring) and apply the environment."""
    file = Path(path) if path is not None else config_path()
    data: dict[str, Any] = {}
    if file is not None:
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(
                f"Config file {file} does not exist. Create it, or unset TETHER_CONFIG."
            ) from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{file} is not valid TOML: {exc}. Fix the file and try again."
            ) from exc
    config = parse_config(data, source=file)
    if os.environ.get("TETHER_MODEL"):
        config.model = os.environ["TETHER_MODEL"]
    if os.environ.get("TETHER_DATA_DIR"):
        config.data_dir = Path(os.environ["TETHER_DATA_DIR"])
    return config


def parse_config(data: Mapping[str, Any], source: Path | None = None) -> Config:
    """Validate a configuration mapping; errors name the file and the key."""
    where = str(source) if source is not None else "configuration"
    try:
        config = Config.model_validate(dict(data))
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key '{key}'")
            else:
                problems.append(f"'{key}': {err['msg']}")
        unknown = any(err["type"] == "extra_forbidden" for err in exc.errors())
        hint = " See the configuration docs for valid keys." if unknown else ""
        raise ConfigError(f"{where}: " + "; ".join(problems) + "." + hint) from None
    config.source = source
    return config


def data_dir(config: Config | None = None) -> Path:
    """Where sessions, memory files and indexes live (created on demand by their owners)."""
    if config is not None and config.data_dir is not None:
        return config.data_dir
    if os.environ.get("TETHER_DATA_DIR"):
        return Path(os.environ["TETHER_DATA_DIR"])
    import platformdirs

    return Path(platformdirs.user_data_dir("tether"))
