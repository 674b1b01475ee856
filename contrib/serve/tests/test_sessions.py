"""Sessions as resources: created, listed, read; kept where the session factory says."""

from __future__ import annotations

import json
from pathlib import Path

import tether
from tether.config import Config
from tether.sessions import JsonlSession
from tether.testing import Reply, ScriptedProvider
from tether_serve import session_is_valid
from tether_serve.testing import parse_sse


def test_sessions_are_created_listed_and_read_with_their_history(serve, client) -> None:
    live = serve()
    with client(live) as http:
        made = http.post("/v1/sessions", json={"id": "trip"})
        assert made.status_code == 201 and made.json()["id"] == "trip"
        assert http.post("/v1/sessions", json={"id": "trip"}).status_code == 409
        assert http.post("/v1/sessions", json={"id": "../etc"}).status_code == 422
        http.post("/v1/sessions/trip/runs", json={"prompt": "Weather in Paris?"})
        listed = http.get("/v1/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == ["trip"]
        read = http.get("/v1/sessions/trip").json()
        runs = http.get("/v1/runs").json()["runs"]
        run = http.get(f"/v1/runs/{runs[0]['id']}").json()
    assert [m["role"] for m in read["history"]] == ["user", "assistant", "tool", "assistant"]
    assert read["runs"] == [runs[0]["id"]]
    assert run["status"] == "completed" and run["result"]["type"] == "done"


def test_cancel_ends_a_live_run_cleanly_and_its_stream_says_so(serve, client) -> None:
    slow = tether.Agent(
        ScriptedProvider(handler=lambda request: Reply(text="word " * 400, chunk=5, pause=0.01)),
        config=Config(),
    )
    live = serve({"default": slow})
    with client(live) as http, client(live) as other:
        with http.stream("POST", "/v1/sessions/c/runs", json={"prompt": "talk"}) as response:
            run_id = response.headers["x-tether-run-id"]
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data:"))
            cancelled = other.post(f"/v1/runs/{run_id}/cancel")
            rest = [line for line in lines if line.startswith("data:")]
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert json.loads(rest[-1][5:])["outcome"] == "cancelled"
        assert other.post("/v1/runs/unknown/cancel").status_code == 404
    assert session_is_valid(live.server.hub.session("local", "c"))


def test_a_session_factory_keeps_histories_in_jsonl_files(serve, client, tmp_path: Path) -> None:
    def jsonl(tenant: str, session_id: str) -> JsonlSession:
        return JsonlSession(tmp_path / tenant / f"{session_id}.jsonl")

    live = serve(session_factory=jsonl)
    with client(live) as http:
        frames = parse_sse(http.post("/v1/sessions/kept/runs", json={"prompt": "Weather?"}).text)
    assert json.loads(frames[-1]["data"])["outcome"] == "completed"
    live.stop()  # shutting down closes the sessions (and releases their locks)
    reopened = JsonlSession(tmp_path / "local" / "kept.jsonl")
    try:
        assert [m.role for m in reopened.messages] == ["user", "assistant", "tool", "assistant"]
    finally:
        reopened.close()
