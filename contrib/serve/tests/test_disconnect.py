"""A client that goes away cancels its run: no task keeps running, the session's
history keeps tether's invariant and the session takes the next prompt."""

from __future__ import annotations

import asyncio
import json
import time

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_serve import ServeSettings, session_is_valid
from tether_serve.testing import parse_sse


@tether.tool
async def slow_lookup(query: str) -> str:
    """A lookup that takes a long time."""
    await asyncio.sleep(60)
    return "never"


def slow_model(request: object) -> Reply:
    last = request.messages[-1]  # type: ignore[attr-defined]
    if last.role == "user" and last.text.startswith("tool"):
        return Reply(text="Looking.", tool_calls=[call("slow_lookup", query="x")])
    return Reply(text="word " * 400, chunk=5, pause=0.01)


def agents() -> dict[str, tether.Agent]:
    provider = ScriptedProvider(handler=slow_model)
    return {"default": tether.Agent(provider, tools=[slow_lookup], config=Config())}


def wait_until_idle(live, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while live.server.hub.running() and time.monotonic() < end:
        time.sleep(0.02)
    assert live.server.hub.running() == [], "a run kept going after its client left"


def read_some(http, path: str, body: dict, frames: int) -> None:
    with http.stream("POST", path, json=body) as response:
        seen = 0
        for line in response.iter_lines():
            if line.startswith("data:"):
                seen += 1
                if seen >= frames:
                    break  # leaving the block closes the connection mid-stream


def test_disconnecting_mid_answer_cancels_the_run_and_the_session_stays_valid(
    serve, client
) -> None:
    live = serve(agents())
    with client(live) as http:
        read_some(http, "/v1/sessions/s/runs", {"prompt": "talk"}, frames=5)
        wait_until_idle(live)
        (run,) = live.server.hub.runs_of("local")
        assert run.status == "cancelled"
        assert run.task is not None and run.task.done()
        record = live.server.hub.session("local", "s")
        assert session_is_valid(record)
        # The session goes on: the next prompt runs to the end on the same history.
        again = parse_sse(http.post("/v1/sessions/s/runs", json={"prompt": "again"}).text)
    assert json.loads(again[-1]["data"])["outcome"] == "completed"
    assert session_is_valid(record)


def test_disconnecting_while_a_tool_runs_interrupts_it_with_a_result(serve, client) -> None:
    live = serve(agents())
    with client(live) as http:
        with http.stream("POST", "/v1/sessions/t/runs", json={"prompt": "tool please"}) as response:
            for line in response.iter_lines():
                if line == "event: tool_start":
                    break
        wait_until_idle(live)
    record = live.server.hub.session("local", "t")
    assert session_is_valid(record)
    results = [b for m in record.session.messages for b in m.content if b.type == "tool_result"]
    assert len(results) == 1 and results[0].is_error


def test_every_ui_protocol_client_that_leaves_cancels_its_run(serve, client) -> None:
    live = serve(agents())
    with client(live) as http:
        read_some(
            http,
            "/v1/agents/default/ui-message-stream",
            {
                "id": "c",
                "messages": [
                    {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
                ],
            },
            frames=4,
        )
        read_some(
            http,
            "/v1/agents/default/ag-ui",
            {
                "threadId": "g",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "hi"}],
            },
            frames=4,
        )
        wait_until_idle(live)
    assert {r.status for r in live.server.hub.runs_of("local")} == {"cancelled"}
    for sid in ("c", "g"):
        assert session_is_valid(live.server.hub.session("local", sid))


def test_with_a_grace_period_a_client_reconnects_with_last_event_id(serve, client) -> None:
    live = serve(agents(), ServeSettings(disconnect_grace_s=30.0))
    with client(live) as http:
        with http.stream("POST", "/v1/sessions/r/runs", json={"prompt": "talk"}) as response:
            run_id = response.headers["x-tether-run-id"]
            last = None
            for line in response.iter_lines():
                if line.startswith("id:"):
                    last = line.split(":", 1)[1].strip()
                    break
        rest = parse_sse(
            http.get(f"/v1/runs/{run_id}/events", headers={"last-event-id": last}).text
        )
    assert int(rest[0]["id"]) == int(last) + 1
    assert json.loads(rest[-1]["data"])["outcome"] == "completed"
    run = live.server.hub.run("local", run_id)
    assert [int(f["id"]) for f in rest] == list(range(int(last) + 1, len(run.events) + 1))
