"""The agent the durable-serve tests' workers build: a scripted model that calls
``note`` once (a call a person must approve), then answers ``noted <text>``. The tool
appends a line to ``ledger`` under ``SERVE_TEST_DIR``, once per idempotency key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call


@tether.tool
def note(ctx: tether.ToolContext, text: str) -> str:
    """Write a line to the ledger."""
    ledger = Path(os.environ["SERVE_TEST_DIR"]) / "ledger"
    seen = ledger.read_text().splitlines() if ledger.exists() else []
    if not any(line.startswith(f"{ctx.idempotency_key}\t") for line in seen):
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key}\t{text}\n")
    return "written"


def _script(request: Any) -> Reply:
    prompt = next(m.text for m in reversed(request.messages) if m.role == "user")
    results = [b for b in request.messages[-1].content if getattr(b, "type", None) == "tool_result"]
    if results:
        return Reply(text=f"noted {prompt}")
    return Reply(text="Noting. ", tool_calls=[call("note", id="call-note", text=prompt)])


def make_agent(config: Config) -> tether.Agent:
    return tether.Agent(
        ScriptedProvider(handler=_script),
        tools=[note],
        config=config,
        permissions={"note": "ask"},
    )
