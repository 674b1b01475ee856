"""``tether mcp list | tools | call`` and ``tether plugins`` against real servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tether_cli import cli


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stdio_table: Any) -> Path:
    """A tether.toml with the test server (`calc`) and one that cannot start (`broken`)."""
    calc = stdio_table()
    broken = str(tmp_path / "no-such-server")
    config = tmp_path / "tether.toml"
    config.write_text(
        "[mcp.servers.calc]\n"
        f"command = {json.dumps(calc['command'])}\n"
        f"args = {json.dumps(calc['args'])}\n"
        f"env = {{ MCP_TEST_RECORD = {json.dumps(calc['env']['MCP_TEST_RECORD'])} }}\n"
        "[mcp.servers.broken]\n"
        f"command = {json.dumps(broken)}\n"
    )
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    return config


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_list_shows_each_servers_tools_or_why_it_is_unavailable(configured: Path) -> None:
    result = invoke("mcp", "list")
    assert result.exit_code == 1
    assert "calc  (stdio" in result.output
    assert "add, echo" in result.output
    assert "broken" in result.output and "could not be started" in result.output


def test_tools_shows_names_and_parameters_as_the_model_sees_them(configured: Path) -> None:
    result = invoke("mcp", "tools", "calc")
    assert result.exit_code == 0, result.output
    assert "calc__add" in result.output and "Add two integers." in result.output
    assert "    a: integer" in result.output
    as_json = json.loads(invoke("mcp", "tools", "calc", "--json").output)
    assert {"name", "description", "parameters"} <= set(as_json[0])


def test_call_prints_the_result_and_fails_on_errors(configured: Path) -> None:
    result = invoke("mcp", "call", "calc", "add", '{"a": 2, "b": 3}')
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "5"
    failed = invoke("mcp", "call", "calc", "fail", '{"reason": "because"}')
    assert failed.exit_code == 1 and "refused: because" in failed.output
    bad = invoke("mcp", "call", "calc", "add", "[1, 2]")
    assert bad.exit_code == 1 and "must be a JSON object" in bad.output
    unknown = invoke("mcp", "call", "nope", "add")
    assert unknown.exit_code == 1 and "Configured: calc, broken" in unknown.output


def test_plugins_reports_a_server_that_fails_to_start(configured: Path) -> None:
    result = invoke("plugins")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    [calc] = [line for line in lines if line.strip().startswith("calc ")]
    assert "calc__add" in calc
    [broken] = [line for line in lines if line.strip().startswith("broken ")]
    assert "unavailable:" in broken and "could not be started" in broken


def test_an_invalid_server_table_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "tether.toml"
    config.write_text('[mcp.servers.both]\ncommand = "x"\nurl = "http://127.0.0.1:1/mcp"\n')
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    result = invoke("mcp", "list")
    assert result.exit_code == 1
    assert "[mcp.servers.both]" in result.output and "either `command`" in result.output
