"""The chat page at ``/`` in real headless Chromium: a prompt streams an answer, Approve
on the pending call runs it and the result shows; model text is never parsed as HTML."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call

JS = Path(__file__).parent / "js"
CHROMIUM = next(
    (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
)


@tether.tool
def deploy(target: str) -> str:
    """Deploy the app to a target."""
    return f"deployed to {target}"


def model(request: Any) -> Reply:
    results = [b for b in request.messages[-1].content if getattr(b, "type", None) == "tool_result"]
    if results:
        return Reply(text=f"Result: {results[0].content}.", chunk=4)
    return Reply(
        text='Deploying **now** <img src=x onerror="document.title=1">',
        chunk=5,
        tool_calls=[call("deploy", target="prod")],
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary installed")
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_chat_page_streams_an_answer_and_approves_a_call_by_click(serve) -> None:
    if not (JS / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=300)
    agent = tether.Agent(
        ScriptedProvider(handler=model),
        tools=[deploy],
        config=Config(),
        permissions={"deploy": "ask"},
    )
    live = serve({"default": agent})
    done = subprocess.run(
        ["node", "chat_page.mjs", live.url + "/", str(CHROMIUM)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert page["firstAnswer"].startswith("Deploying now")
    assert page["strong"] == "now"  # the Markdown subset renders
    assert '<img src=x onerror="document.title=1">' in page["firstAnswer"]  # shown as text
    assert page["injectedImages"] == 0
    assert page["answers"][-1] == "Result: deployed to prod."
    assert any("deployed to prod" in row for row in page["toolRows"])
    assert "completed" in page["cost"]
    assert page["sessions"] and page["foreignRequests"] == []
    (record,) = live.server.hub.sessions.values()
    assert record.pending == [] and record.running is None
