"""Which agent serves which route, from a ``[serve]`` table: model, tools, permissions,
output type; and clear errors for tables that cannot be served."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider
from tether_serve import agents_from_settings, settings_from_table
from tether_serve.testing import parse_sse


@dataclass
class Verdict:
    ok: bool
    reason: str


@tether.tool
def measure(depth: int) -> str:
    """Measure something."""
    return f"{depth} m"


class ScriptedPlugin:
    @tether.hookimpl
    def register_providers(self, providers: Any) -> None:
        providers.add(
            "scripted",
            lambda config: ScriptedProvider(
                handler=lambda request: Reply(text='{"ok": true, "reason": "fine"}')
            ),
        )

    @tether.hookimpl
    def register_tools(self, tools: Any) -> None:
        tools.add(measure)


TABLE = {
    "agents": {
        "judge": {
            "model": "scripted/scripted-model",
            "system": "Judge.",
            "tools": ["measure"],
            "permissions": {"measure": "deny"},
            "output_type": "test_settings:Verdict",
        },
        "raw": {"model": "scripted/scripted-model", "output_type": "json"},
    }
}


def test_agents_are_built_from_the_table_and_serve_their_output_type(
    serve, client, monkeypatch
) -> None:
    monkeypatch.syspath_prepend(__file__.rsplit("/", 1)[0])
    settings = settings_from_table(TABLE)
    manager = tether.PluginManager(plugins=[ScriptedPlugin()], entry_points=False, config=Config())
    agents = agents_from_settings(settings, Config(), plugin_manager=manager)
    assert sorted(agents) == ["judge", "raw"]
    judge = agents["judge"]
    assert judge.system == "Judge." and [t.name for t in judge.tools()] == ["measure"]
    live = serve(agents)
    with client(live) as http:
        done = json.loads(
            parse_sse(
                http.post("/v1/sessions/j/runs", json={"prompt": "ok?", "agent": "judge"}).text
            )[-1]["data"]
        )
        missing = http.post("/v1/sessions/x/runs", json={"prompt": "hi", "agent": "nobody"})
    assert done["outcome"] == "completed", done
    assert done["output"] == {"ok": True, "reason": "fine"}
    judge_type, raw_type = (a.output_type for a in settings.agents)
    assert judge_type.__name__ == "Verdict" and raw_type == dict[str, Any]
    assert missing.status_code == 404 and "nobody" in missing.json()["error"]["message"]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"agents": {"a": {"modle": "x"}}}, "unknown keys ['modle']"),
        ({"agents": {"a": {"output_type": "yaml"}}}, 'use "json" or "module:Type"'),
        ({"agents": {"a": {"output_type": "no_such_module:T"}}}, "cannot be imported"),
        ({"port": "eighty"}, "port = 'eighty' is not a int"),
        ({"cors_origins": "*"}, "cors_origins must be a list"),
        ({"keys": [{"tenant": "t", "key_sha256": "abc"}]}, "64 hex digits"),
    ],
)
def test_bad_tables_say_what_is_wrong(table: dict[str, Any], message: str) -> None:
    with pytest.raises(tether.ConfigError) as raised:
        settings_from_table(table, env={})
    assert message in str(raised.value)


def test_durable_mode_and_each_agents_worker_factory_are_read_from_the_table() -> None:
    settings = settings_from_table(
        {"durable": True, "agents": {"default": {"durable_agent": "myapp.agents:build"}}}
    )
    assert settings.durable is True
    assert settings.agents[0].durable_agent == "myapp.agents:build"
    assert settings_from_table({}).durable is False


@pytest.mark.parametrize("value", ["myapp.agents", ":build", "myapp:", 3])
def test_a_durable_agent_that_is_not_module_colon_function_is_refused(value: Any) -> None:
    with pytest.raises(tether.ConfigError, match=r"durable_agent.*package\.module:function"):
        settings_from_table({"agents": {"default": {"durable_agent": value}}})


def test_durable_mode_refuses_agents_the_workers_cannot_build() -> None:
    from tether_serve.durable import durable_server_from_settings

    settings = settings_from_table({"durable": True, "agents": {"default": {"model": "x/y"}}})
    with pytest.raises(tether.ConfigError, match=r"\['default'\] have no durable_agent"):
        durable_server_from_settings(settings, Config())


def test_durable_must_be_a_boolean_not_a_string() -> None:
    with pytest.raises(tether.ConfigError, match="durable = 'false' is not a boolean"):
        settings_from_table({"durable": "false"})
