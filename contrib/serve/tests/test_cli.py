"""``tether serve`` as a user runs it: a real process from a tether.toml, driven by the
AG-UI client; and clear errors for a configuration it cannot serve."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).parent
TETHER = Path(sys.executable).with_name("tether")

CONFIG = """
[serve]
port = {port}

[serve.agents.default]
model = "scripted/scripted-model"
tools = ["get_weather"]

[serve.agents.careful]
model = "scripted/scripted-model"
tools = ["get_weather"]
permissions = {{ get_weather = "ask" }}

[[serve.keys]]
tenant = "acme"
key_env = "SERVE_TEST_KEY"
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")])),
        SERVE_TEST_KEY="the-acme-key",
        TETHER_CONFIG=str(tmp_path / "tether.toml"),
        TETHER_DATA_DIR=str(tmp_path / "data"),
    )
    env.pop("TETHER_MODEL", None)
    return env


@pytest.fixture
def served(tmp_path: Path):
    port = free_port()
    (tmp_path / "tether.toml").write_text(CONFIG.format(port=port))
    process = subprocess.Popen(
        [str(TETHER), "-p", "scripted_serve_plugin", "serve"],
        env=environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read() if process.stderr else "") from None
            time.sleep(0.05)
    else:
        process.kill()
        raise AssertionError("tether serve did not answer /healthz within 30 s")
    yield url
    process.terminate()
    try:
        _, stderr = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    assert "the-acme-key" not in stderr


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_ag_ui_client_runs_a_tool_calling_agent_through_tether_serve(served: str) -> None:
    js = HERE / "js"
    if not (js / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=js, check=True, timeout=300)
    done = subprocess.run(
        ["node", "agui_client.mjs", f"{served}/v1/agents/default/ag-ui", "the-acme-key"],
        cwd=js,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    kinds = [e["type"] for e in got["events"]]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_RESULT")
    assert got["messages"][-1]["content"] == "The forecast: Sunny in Paris, 21 C. Enjoy!"


def test_the_configured_agents_keys_and_permissions_are_served(served: str) -> None:
    key = {"authorization": "Bearer the-acme-key"}
    assert httpx.get(f"{served}/v1/agents").status_code == 401
    agents = httpx.get(f"{served}/v1/agents", headers=key).json()["agents"]
    assert agents == ["careful", "default"]
    careful = httpx.post(
        f"{served}/v1/sessions/s/runs",
        json={"prompt": "Weather?", "agent": "careful"},
        headers=key,
        timeout=30,
    )
    assert '"outcome":"suspended"' in careful.text  # the permission rule asks first
    (pending,) = httpx.get(f"{served}/v1/approvals", headers=key).json()["approvals"]
    assert pending["tool"] == "get_weather"


def test_serve_check_reports_a_config_without_agents(tmp_path: Path) -> None:
    (tmp_path / "tether.toml").write_text("[serve]\nport = 9\n")
    done = subprocess.run(
        [str(TETHER), "serve", "--check"],
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "No agents to serve" in done.stderr and "[serve.agents.default]" in done.stderr


def test_serve_check_names_a_missing_key_variable(tmp_path: Path) -> None:
    (tmp_path / "tether.toml").write_text(CONFIG.format(port=9))
    env = environment(tmp_path)
    env.pop("SERVE_TEST_KEY")
    done = subprocess.run(
        [str(TETHER), "-p", "scripted_serve_plugin", "serve", "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "SERVE_TEST_KEY is not set" in done.stderr


def test_serve_binds_loopback_unless_told_otherwise(tmp_path: Path) -> None:
    (tmp_path / "tether.toml").write_text(CONFIG.format(port=8123))
    done = subprocess.run(
        [str(TETHER), "-p", "scripted_serve_plugin", "serve", "--check"],
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "http://127.0.0.1:8123/" in done.stderr
    assert "the-acme-key" not in done.stderr + done.stdout
