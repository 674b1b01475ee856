"""`tether run` end to end against the fake server tether ships: the real CLI, the real
OpenAI SDK and real loopback HTTP, with no API key anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tether_testing import FakeModelServer, chat_reply


def test_tether_run_against_the_shipped_fake_server_needs_no_key(tmp_path: Path) -> None:
    tether = Path(sys.executable).with_name("tether")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and not key.startswith("TETHER_")
    }
    with FakeModelServer(models=["local-model"]) as server:
        server.queue(chat_reply("local-model", text="Hello from the fake server."))
        env.update(
            HOME=str(tmp_path),
            XDG_CONFIG_HOME=str(tmp_path / "config"),
            TETHER_DATA_DIR=str(tmp_path / "data"),
            VLLM_BASE_URL=f"{server.url}/v1",
        )
        completed = subprocess.run(
            [str(tether), "run", "-m", "vllm/local-model", "Say hello."],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        requests = list(server.requests)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "Hello from the fake server."
    chat = [r for r in requests if r.method == "POST"]
    assert [r.path for r in chat] == ["/v1/chat/completions"]
    body = chat[0].json()
    assert body["model"] == "local-model" and body["stream"] is True
    assert body["messages"][-1]["content"] in (
        "Say hello.",
        [{"type": "text", "text": "Say hello."}],
    )
    assert not any("Bearer sk" in value for value in chat[0].headers.values())
