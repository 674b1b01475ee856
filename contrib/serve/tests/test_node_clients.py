"""Real frontend clients from npm against a real server: ``@ag-ui/client``'s HttpAgent
and the ``ai`` package's DefaultChatTransport + readUIMessageStream.

The packages are installed by ``npm ci`` in ``tests/js`` (``.ci/run`` does it); the
tests are skipped only when npm/node are missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tether_serve import ApiKey, ServeSettings

JS = Path(__file__).parent / "js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NODE is None or shutil.which("npm") is None, reason="node/npm are not installed"
)


def run_node(script: str, *args: str) -> dict[str, Any]:
    if not (JS / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=300)
    done = subprocess.run(
        [str(NODE), script, *args], cwd=JS, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def keyed() -> ServeSettings:
    return ServeSettings(keys=[ApiKey.plain("acme", "acme-secret-key")])


def test_ag_ui_http_agent_runs_an_agent_with_a_tool_call_and_gets_events_in_order(serve) -> None:
    live = serve(settings=keyed())
    got = run_node("agui_client.mjs", f"{live.url}/v1/agents/default/ag-ui", "acme-secret-key")
    kinds = [e["type"] for e in got["events"]]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    expected_order = [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STATE_DELTA",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
    ]
    deduplicated = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert deduplicated[: len(expected_order)] == expected_order
    # The client assembled the conversation: the tool call, its result and the answer.
    messages = got["messages"]
    calls = [c for m in messages for c in m.get("toolCalls", [])]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"}
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["content"] == "Sunny in Paris, 21 C"
    assert messages[-1]["content"] == "The forecast: Sunny in Paris, 21 C. Enjoy!"
    assert live.server.hub.session("acme", "agui-thread") is not None


def test_ai_sdk_reassembles_the_answer_and_the_tool_call_from_the_ui_message_stream(
    serve,
) -> None:
    live = serve(settings=keyed())
    got = run_node(
        "ai_client.mjs", f"{live.url}/v1/agents/default/ui-message-stream", "acme-secret-key"
    )
    parts = got["message"]["parts"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts == ["Let me check.", "The forecast: Sunny in Paris, 21 C. Enjoy!"]
    (tool,) = [p for p in parts if p["type"] == "tool-get_weather"]
    assert tool["state"] == "output-available"
    assert tool["input"] == {"city": "Paris"}
    assert tool["output"] == "Sunny in Paris, 21 C"
    assert got["message"]["metadata"]["sessionId"] == "ai-chat"
    assert got["message"]["metadata"]["outcome"] == "completed"


def test_a_client_without_the_key_is_refused(serve) -> None:
    live = serve(settings=keyed())
    done = subprocess.run(
        [str(NODE), "ai_client.mjs", f"{live.url}/v1/agents/default/ui-message-stream"],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert live.server.hub.sessions == {}
