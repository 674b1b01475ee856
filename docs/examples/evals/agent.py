"""The agent of the offline example: a scripted model per case, a ``read_file`` tool
working in the trial's workspace, and a small knowledge base of policies.

Run it with ``tether eval run support.yaml --agent agent.py:make_agent``; the judge is
the scripted grader from :func:`eval_models`.
"""

from __future__ import annotations

import json
from pathlib import Path

import tether
from tether.knowledge import KnowledgeBase, MemoryBackend
from tether.provider import ModelRequest
from tether.testing import Reply, ScriptedProvider, call, rate_limited
from tether_evals import TrialSetup

POLICIES = {
    "refunds.md": "Refunds\nCustomers may ask for a refund within 30 days of purchase.\n",
    "shipping.md": "Shipping\nParcels ship within 2 working days; refunds of shipping fees vary.\n",
    "privacy.md": "Privacy\nWe keep customer data for 5 years.\n",
}

SCRIPTS: dict[str, list[Reply | object]] = {
    "capital": [Reply(text="The capital of France is Paris.")],
    "greeting": [Reply(text="Hello, Ada!")],
    "invoice": [
        Reply(text=json.dumps({"total": 42.5, "currency": "EUR", "customer": {"name": "ACME"}}))
    ],
    "notes": [
        Reply(tool_calls=[call("read_file", path="NOTES.md")]),
        Reply(text="Your notes say: never deploy on Fridays."),
    ],
    "refunds": [
        Reply(tool_calls=[call("kb_search", query="refund within days", k=3)]),
        Reply(text="Customers have 30 days to ask for a refund (refunds.md)."),
    ],
    "flaky-network": [rate_limited(retry_after=0.0), Reply(text="All systems operational.")],
}


async def _no_sleep(delay: float) -> None:
    return None


def _read_file_tool(workspace: Path) -> tether.Tool:
    @tether.tool
    def read_file(path: str) -> str:
        """Read a text file of the workspace."""
        return (workspace / path).read_text(encoding="utf-8")

    return read_file


async def make_agent(setup: TrialSetup) -> tether.Agent:
    """A fresh agent for one trial of ``setup.case``."""
    kb = KnowledgeBase(MemoryBackend())
    for name, text in POLICIES.items():
        await kb.add(name, text)
    return tether.Agent(
        ScriptedProvider(SCRIPTS[setup.case.id]),  # type: ignore[arg-type]
        tools=[_read_file_tool(setup.workspace), kb.as_tool()],
        cwd=setup.workspace,
        config=tether.Config(),
        retry=tether.RetryPolicy(sleep=_no_sleep),
        entry_points=False,
        skills=False,
    )


def grade(request: ModelRequest) -> Reply:
    """The scripted judge: full marks when the answer section names Paris."""
    prompt = request.messages[-1].text
    answer = prompt.split("## The assistant's answer", 1)[-1]
    if "Paris" in answer:
        verdict = {"reasoning": "The answer names Paris, which is correct.", "score": 1.0}
    else:
        verdict = {"reasoning": "The answer does not name Paris.", "score": 0.0}
    return Reply(text=json.dumps(verdict))


def eval_models() -> dict[str, object]:
    """The models the dataset's checks name: the judge."""
    return {"judge": ScriptedProvider(handler=grade)}
