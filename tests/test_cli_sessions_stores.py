"""``tether sessions`` on the store ``[sessions] store`` names (SQLite, PostgreSQL,
Redis): list, show, repair and rm see the sessions an agent keeps there, and no JSONL
directory appears."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tether.config import parse_config
from tether.messages import Message, ToolCallBlock, ToolResultBlock, new_id
from tether.plugins import PluginManager
from tether.sessions import append_message, close_session, open_session_backend
from tether_postgres.testing import temporary_database


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    with temporary_database(prefix="tether_cli_sessions") as dsn:
        yield dsn


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def store_settings(
    request: pytest.FixtureRequest, session_store_section: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    return session_store_section(request.param)


def _toml(sessions: dict[str, Any]) -> str:
    settings = ", ".join(f'{key} = "{value}"' for key, value in sessions["settings"].items())
    return f'[sessions]\nstore = "{sessions["store"]}"\nsettings = {{ {settings} }}\n'


def _write(sessions: dict[str, Any], name: str, messages: list[Message]) -> None:
    async def write() -> None:
        store = open_session_backend(parse_config({"sessions": sessions}), PluginManager())
        try:
            session = await store.open(name)
            for message in messages:
                await append_message(session, message)
            await close_session(session)
        finally:
            await store.aclose()

    asyncio.run(write())


def test_sessions_commands_use_the_configured_store(
    store_settings: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether_cli import cli

    data = tmp_path / "data"
    monkeypatch.setenv("TETHER_DATA_DIR", str(data))
    config = tmp_path / "tether.toml"
    config.write_text(_toml(store_settings))
    name = f"work-{new_id()[:6]}"

    def run(*args: str, stdout: bool = False) -> tuple[int, str]:
        result = CliRunner().invoke(cli, ["--config", str(config), "sessions", *args])
        return result.exit_code, result.stdout if stdout else result.output

    code, out = run("list")
    assert code == 0 and f"No sessions in the {store_settings['store']} session store" in out

    call = ToolCallBlock(id="c1", name="read_file", arguments={"path": "p.py"})
    _write(
        store_settings,
        name,
        [
            Message.user("fix the parser"),
            Message(role="assistant", content=[call]),
            Message.tool([ToolResultBlock(call_id="c1", content="def parse(): ...")]),
            Message(role="assistant", content=[ToolCallBlock(id="c2", name="read_file")]),
        ],  # the last call has no result: the history needs repair
    )
    code, out = run("list")
    assert code == 0 and name in out and "4 messages" in out, out
    code, out = run("show", name)
    assert code == 0, out
    assert "fix the parser" in out and "read_file" in out and "def parse()" in out
    assert "Needs repair: 1 interrupted call" in out
    code, out = run("show", name, "--json", stdout=True)
    assert [json.loads(line)["role"] for line in out.splitlines()] == [
        "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip

    code, out = run("repair", name, "--dry-run")
    assert code == 0 and "Nothing was written" in out
    code, out = run("repair", name)
    assert code == 0 and f"Repaired session {name}" in out
    code, out = run("repair", name)
    assert code == 0 and "nothing to repair" in out
    assert "5 messages" in run("list")[1]

    assert run("rm", name)[0] == 0
    code, out = run("rm", name)
    assert code == 1 and f"No session named '{name}'" in out
    code, out = run("show", name)
    assert code == 1 and f"No session named '{name}'" in out
    assert not (data / "sessions").exists()  # nothing went to the JSONL store
    if store_settings["store"] == "sqlite":
        with sqlite3.connect(store_settings["settings"]["path"]) as conn:
            assert conn.execute("SELECT COUNT(*) FROM tether_sessions").fetchone() == (0,)
