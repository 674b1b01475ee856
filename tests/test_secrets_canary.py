"""A canary API key, set in every supported way (environment, config file, inside a
``base_url``), provoked through retried errors and 401s that quote it back, a bad URL,
debug logging, tool output and ``--json``/``--debug`` CLI runs, appears in no output,
event, log record, traceback, trace span, request body the model sees, or file."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tether
from tether import Agent
from tether.config import Config, ProviderConfig
from tether.errors import AuthenticationError
from tether.events import Done, Retry, RunEvent
from tether.scrub import format_exception
from tether.sessions import JsonlSession
from tether.testing import assert_invariant
from tether_otel import OtelPlugin
from tether_testing.http import FakeResponse, FakeServer

TETHER = Path(sys.executable).with_name("tether")
MODEL = "gpt-4.1"


def canary() -> str:
    """A key no pattern recognises: only knowing it as a secret can hide it."""
    return f"canary{uuid.uuid4().hex}"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-canary",
        "object": "chat.completion.chunk",
        "created": 1756306542,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def reply(text: str = "", calls: list[tuple[str, str]] = ()) -> FakeResponse:  # type: ignore[assignment]
    chunks = [_chunk({"role": "assistant", "content": text})]
    for index, (call_id, name) in enumerate(calls):
        call = {"index": index, "id": call_id, "type": "function"}
        chunks.append(
            _chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": "{}"}}]})
        )
    chunks.append(_chunk({}, finish="tool_calls" if calls else "stop"))
    return FakeResponse.sse([*((None, c) for c in chunks), (None, "[DONE]")])


def quoting(status: int, key: str) -> FakeResponse:
    """An error that quotes the key back, as some gateways do."""
    code = "invalid_api_key" if status == 401 else "server_error"
    return FakeResponse.json(
        {
            "error": {
                "message": f"Incorrect API key provided: {key}. You can find your key in your account.",
                "type": "invalid_request_error",
                "code": code,
            }
        },
        status=status,
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def files_containing(root: Path, secret: str) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and secret.encode() in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TETHER_PLUGINS_ALLOW", "openai")
    monkeypatch.delenv("TETHER_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@tether.tool
def print_environment() -> str:
    """Print the environment (what a careless shell command does)."""
    return "\n".join(f"{name}={value}" for name, value in os.environ.items())


@tether.tool
def read_proc_environ() -> str:
    """Read this process's environment the way /proc exposes it."""
    return Path("/proc/self/environ").read_bytes().replace(b"\0", b"\n").decode("utf-8", "replace")


async def test_env_key_never_leaves_through_errors_events_logs_tools_or_session(
    tmp_path: Path, home: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = canary()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    log_file = tmp_path / "debug.log"
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in ("openai", "httpx", "httpcore", "tether"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    server.queue(
        quoting(500, key),  # retried: its text travels in a Retry event
        reply(calls=[("c1", "print_environment"), ("c2", "read_proc_environ")]),
        reply("Done."),
        quoting(401, key),
    )
    config = Config(
        providers={
            "openai": ProviderConfig.model_validate({"base_url": server.url + "/v1", "api": "chat"})
        }
    )
    events: list[RunEvent] = []
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = OtelPlugin(tracer_provider=tracer_provider, capture_content=True)
    try:
        with JsonlSession(tmp_path / "session.jsonl") as session:
            agent = Agent(
                f"openai/{MODEL}",
                config=config,
                tools=[print_environment, read_proc_environ],
                session=session,
                retry=tether.RetryPolicy(base_delay=0.01),
                plugins=[telemetry],
            )
            async for event in agent.stream("Show me the environment."):
                events.append(event)
            with pytest.raises(AuthenticationError) as info:
                await agent.run("Again.")
            await agent.aclose()
            assert_invariant(session.messages)
            in_memory = [m.to_json() for m in session.messages]
    finally:
        tracer_provider.shutdown()
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()

    done = events[-1]
    assert isinstance(done, Done) and done.result.output == "Done."
    retry = next(e for e in events if isinstance(e, Retry))
    assert "Incorrect API key provided: ***" in str(retry.error)
    assert "OPENAI_API_KEY=***" in "\n".join(in_memory)  # the tool ran; its output was redacted
    shown = [
        repr(events),
        *(str(e) for e in events),
        str(retry.error),
        format_exception(retry.error),
        str(info.value),
        format_exception(info.value),
        *in_memory,
        *(r.body.decode() for r in server.requests),  # what the model saw
        *(span.to_json() for span in spans.get_finished_spans()),  # traces, content included
    ]
    assert any("OPENAI_API_KEY=***" in span.to_json() for span in spans.get_finished_spans())
    assert not [text for text in shown if key in text]
    assert log_file.stat().st_size > 0
    assert files_containing(tmp_path, key) == []


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TETHER), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def test_config_and_base_url_keys_never_leave_through_cli_output_or_files(
    tmp_path: Path, home: Path, server: FakeServer
) -> None:
    config_key, url_key = canary(), canary()
    config = tmp_path / "tether.toml"
    config.write_text(
        f"""
[providers.openai]
api_key = "{config_key}"
base_url = "{server.url}/v1"
api = "chat"

[limits]
retry_budget_s = 8
"""
    )
    env = {"TETHER_CONFIG": str(config), "OPENAI_LOG": "debug"}
    server.queue(quoting(500, config_key), quoting(401, config_key))
    as_json = run_cli("--debug", "run", "--json", "-m", f"openai/{MODEL}", "hello", env=env)
    assert as_json.returncode != 0
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [line["type"] for line in lines][-1] == "error"
    assert any(line["type"] == "retry" for line in lines), as_json.stdout + as_json.stderr[-3000:]
    assert "Traceback" in as_json.stderr and "HTTP 401" in as_json.stderr

    server.queue(quoting(401, config_key))
    plain = run_cli("--debug", "run", "-m", f"openai/{MODEL}", "hello", env=env)
    assert plain.returncode != 0 and "HTTP 401" in plain.stderr

    bad_url = f"http://gateway:{url_key}@127.0.0.1:{closed_port()}/v1?key={url_key}"
    config.write_text(config.read_text().replace(f"{server.url}/v1", bad_url))
    unreachable = run_cli("--debug", "run", "--json", "-m", f"openai/{MODEL}", "hello", env=env)
    assert unreachable.returncode != 0
    assert "127.0.0.1" in unreachable.stdout + unreachable.stderr

    for key in (config_key, url_key):
        for proc in (as_json, plain, unreachable):
            assert key not in proc.stdout and key not in proc.stderr
        assert files_containing(tmp_path / "data", key) == []
        assert files_containing(home, key) == []


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_reprs_of_configs_and_providers_hide_keys_in_base_urls(
    name: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_PLUGINS_ALLOW", name)
    key, url_key = canary(), canary()
    config = Config(
        providers={
            name: ProviderConfig.model_validate(
                {"api_key": key, "base_url": f"https://proxy:{url_key}@gateway.example/v1"}
            )
        }
    )
    agent = Agent(f"{name}/some-model", config=config)
    shown = [repr(config), str(config), repr(agent.provider()), repr(config.providers[name])]
    for text in shown:
        assert key not in text and url_key not in text
    assert "gateway.example" in repr(agent.provider())


async def test_store_sessions_are_written_without_secrets(tmp_path: Path, home: Path) -> None:
    from tether.messages import Message
    from tether.scrub import register_secret
    from tether.sessions.sqlite import SqliteSessionStore

    key = canary()
    register_secret(key)
    store = SqliteSessionStore(path=str(tmp_path / "sessions.sqlite3"))
    try:
        session = await store.open("chat")
        await session.append(Message.user(f"my key is {key}, keep it safe"))
        await session.replace([*session.messages, Message.user(f"again {key}")])
    finally:
        await store.aclose()
    assert files_containing(tmp_path, key) == []
