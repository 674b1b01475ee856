"""Server settings: the ``[serve]`` table of ``tether.toml``, or built in Python.

```toml
[serve]
host = "127.0.0.1"            # loopback unless told otherwise
port = 8000
cors_origins = ["https://app.example.com"]
max_body_bytes = 1_000_000
rate_per_minute = 120         # per API key
max_concurrent_runs = 8       # per API key
run_log = "runs.sqlite"       # where traces are read from (default: tether's run log)
sessions_dir = "sessions"     # keep histories and their owners across restarts

[serve.agents.default]        # POST /v1/agents/default/...
model = "anthropic/claude-sonnet-4-5"
system = "You are a helpful assistant."
tools = ["fs"]
permissions = "ask"           # or a table of rules
output_type = "json"          # optional: "json" or "module:Type"

[[serve.keys]]
tenant = "acme"
key_env = "ACME_API_KEY"      # the key itself, from the environment
[[serve.keys]]
tenant = "globex"
key_sha256 = "9f86d0…"        # or its SHA-256, hex: the key never sits in the file
```
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tether import ConfigError

__all__ = ["AgentSpec", "ApiKey", "ServeSettings", "settings_from_table"]


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key (held only as its SHA-256) that authenticates requests of ``tenant``."""

    tenant: str
    sha256: str

    @classmethod
    def plain(cls, tenant: str, key: str) -> ApiKey:
        return cls(tenant, hashlib.sha256(key.encode()).hexdigest())


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """How to build a served agent from configuration (see the module docstring)."""

    name: str
    model: str | None = None
    system: str | None = None
    tools: tuple[str, ...] | None = None
    permissions: str | Mapping[str, str] | None = None
    output_type: Any = None
    durable_agent: str | None = None
    """``"package.module:function"`` building the agent on a ``tether worker`` (it
    receives the worker's ``Config``): how durable runs (``[serve] durable``) build it."""


@dataclass(slots=True)
class ServeSettings:
    """Everything the server is configured with besides its agents."""

    host: str = "127.0.0.1"
    port: int = 8000
    keys: list[ApiKey] = field(default_factory=list)
    """Without keys, no authentication: every request is tenant ``local`` (fine on
    loopback; give keys before binding anything else)."""
    cors_origins: list[str] = field(default_factory=list)
    max_body_bytes: int = 1_000_000
    rate_per_minute: float = 120.0
    rate_burst: int = 30
    max_concurrent_runs: int = 8
    disconnect_grace_s: float = 0.0
    """How long a run whose last client disconnected keeps running, so a client can
    reconnect with ``Last-Event-ID``; then it is cancelled."""
    cancel_deadline_s: float = 10.0
    """How long a cancelled run may take to end cleanly before its task is cancelled."""
    retained_runs: int = 1000
    """Finished runs whose events are kept for replay (oldest dropped first)."""
    keepalive_s: float = 15.0
    sessions_dir: str | None = None
    """Keep sessions in this directory: each history a JSONL file ``TENANT/SESSION.jsonl``
    and which tenant owns which session in ``owners.jsonl``, so a restarted server
    serves them again; in memory when unset."""
    run_log: str | None = None
    """The run log ``GET /v1/runs/{id}/trace`` reads trace trees from: a path, or ``off``;
    by default where tether records runs (``TETHER_RUN_LOG``, ``[observers.runlog]``)."""
    agents: list[AgentSpec] = field(default_factory=list)
    durable: bool = False
    """Run on ``tether worker`` processes through tether-dbos (``[durable]`` of the same
    configuration): runs survive the server, approvals resume on any worker, streams
    resume with ``Last-Event-ID`` on any server, and ownership lives in PostgreSQL."""


def boolean(value: Any) -> bool:
    """``true`` or ``false`` (TOML booleans only: the string ``"false"`` is refused)."""
    if not isinstance(value, bool):
        raise TypeError(value)
    return value


_SCALARS: dict[str, Any] = {
    "host": str,
    "port": int,
    "max_body_bytes": int,
    "rate_per_minute": float,
    "rate_burst": int,
    "max_concurrent_runs": int,
    "disconnect_grace_s": float,
    "cancel_deadline_s": float,
    "retained_runs": int,
    "keepalive_s": float,
    "run_log": str,
    "sessions_dir": str,
    "durable": boolean,
}


def settings_from_table(
    table: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> ServeSettings:
    """Parse a ``[serve]`` table; raises :class:`tether.ConfigError` saying what is wrong."""
    env = os.environ if env is None else env
    settings = ServeSettings()
    known = {*_SCALARS, "keys", "cors_origins", "agents"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"[serve] has unknown keys {unknown}. Known keys: {sorted(known)}.")
    for name, kind in _SCALARS.items():
        if name in table:
            try:
                setattr(settings, name, kind(table[name]))
            except (TypeError, ValueError):
                raise ConfigError(
                    f"[serve] {name} = {table[name]!r} is not a {kind.__name__}."
                ) from None
    origins = table.get("cors_origins", [])
    if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
        raise ConfigError("[serve] cors_origins must be a list of origins (strings).")
    settings.cors_origins = list(origins)
    settings.keys = [_key(entry, env) for entry in table.get("keys", [])]
    agents = table.get("agents", {})
    if not isinstance(agents, Mapping):
        raise ConfigError("[serve.agents] must be a table of agents: [serve.agents.NAME].")
    settings.agents = [_agent(name, spec) for name, spec in agents.items()]
    return settings


def _key(entry: Any, env: Mapping[str, str]) -> ApiKey:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("tenant"), str):
        raise ConfigError('Each [[serve.keys]] entry needs tenant = "NAME".')
    tenant = entry["tenant"]
    if "key_sha256" in entry:
        digest = str(entry["key_sha256"]).lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ConfigError(
                f"[[serve.keys]] of tenant {tenant!r}: key_sha256 must be 64 hex digits "
                "(python -c \"import hashlib; print(hashlib.sha256(b'KEY').hexdigest())\")."
            )
        return ApiKey(tenant, digest)
    variable = entry.get("key_env")
    if not isinstance(variable, str):
        raise ConfigError(
            f"[[serve.keys]] of tenant {tenant!r}: give key_env (an environment variable "
            "holding the key) or key_sha256; a key itself never goes in the file."
        )
    value = env.get(variable)
    if not value:
        raise ConfigError(
            f"[[serve.keys]] of tenant {tenant!r}: the environment variable {variable} is "
            "not set. Set it to the tenant's API key."
        )
    return ApiKey.plain(tenant, value)


def _agent(name: str, spec: Any) -> AgentSpec:
    if not isinstance(spec, Mapping):
        raise ConfigError(f"[serve.agents.{name}] must be a table (model, tools, ...).")
    allowed = {"model", "system", "tools", "permissions", "output_type", "durable_agent"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(
            f"[serve.agents.{name}] has unknown keys {unknown}. Known: {sorted(allowed)}."
        )
    tools = spec.get("tools")
    return AgentSpec(
        name=name,
        model=spec.get("model"),
        system=spec.get("system"),
        tools=tuple(tools) if tools is not None else None,
        permissions=spec.get("permissions"),
        output_type=_output_type(name, spec.get("output_type")),
        durable_agent=_durable_agent(name, spec.get("durable_agent")),
    )


def _durable_agent(agent: str, value: Any) -> str | None:
    if value is None:
        return None
    module, _, function = str(value).partition(":")
    if not isinstance(value, str) or not module or not function:
        raise ConfigError(
            f'[serve.agents.{agent}] durable_agent = {value!r}: use "package.module:function" '
            "(a function taking the worker's Config and returning the tether.Agent)."
        )
    return value


def _output_type(agent: str, value: Any) -> Any:
    if value is None:
        return None
    if value == "json":
        return dict[str, Any]
    if isinstance(value, str) and ":" in value:
        module, _, attribute = value.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as error:
            raise ConfigError(
                f"[serve.agents.{agent}] output_type = {value!r} cannot be imported: {error}."
            ) from None
    raise ConfigError(
        f'[serve.agents.{agent}] output_type = {value!r}: use "json" or "module:Type".'
    )
