"""Sessions and their tenants survive a restart of the server (``sessions_dir``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether import ConfigError
from tether_serve import ApiKey, ServeSettings
from tether_serve.owners import JsonlOwnerStore, Owned
from tether_serve.testing import parse_sse

A_KEY, B_KEY = "owners-key-a-0123456789", "owners-key-b-0123456789"


def settings(directory: Path) -> ServeSettings:
    return ServeSettings(
        keys=[ApiKey.plain("a", A_KEY), ApiKey.plain("b/odd tenant", B_KEY)],
        sessions_dir=str(directory),
    )


def outcome(text: str) -> str:
    return json.loads(parse_sse(text)[-1]["data"])["outcome"]


def test_a_restarted_server_serves_each_tenant_its_sessions_and_no_other(
    serve, client, tmp_path
) -> None:
    first = serve(settings=settings(tmp_path))
    with client(first, A_KEY) as a, client(first, B_KEY) as b:
        assert outcome(a.post("/v1/sessions/trip/runs", json={"prompt": "Weather?"}).text) == (
            "completed"
        )
        assert b.post("/v1/sessions", json={"id": "notes"}).status_code == 201
    first.stop()

    second = serve(settings=settings(tmp_path))
    with client(second, A_KEY) as a, client(second, B_KEY) as b:
        assert [s["id"] for s in a.get("/v1/sessions").json()["sessions"]] == ["trip"]
        history = a.get("/v1/sessions/trip").json()["history"]
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
        # A continues its conversation where it was.
        assert outcome(a.post("/v1/sessions/trip/runs", json={"prompt": "Again?"}).text) == (
            "completed"
        )
        assert len(a.get("/v1/sessions/trip").json()["history"]) == 8
        # B still has its own session and still cannot reach A's.
        assert [s["id"] for s in b.get("/v1/sessions").json()["sessions"]] == ["notes"]
        assert b.get("/v1/sessions/trip").status_code == 404
        assert a.get("/v1/sessions/notes").status_code == 404
        # B may make a "trip" of its own: another history than A's.
        assert b.post("/v1/sessions", json={"id": "trip"}).status_code == 201
        assert b.get("/v1/sessions/trip").json()["history"] == []
    second.stop()
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jsonl"))
    assert "a/trip.jsonl" in files and "owners.jsonl" in files
    assert not any("odd tenant" in f or f.startswith("b/") for f in files)  # no path from a name


def test_the_owners_file_is_appended_and_read_back(tmp_path) -> None:
    store = JsonlOwnerStore(tmp_path / "deep" / "owners.jsonl")
    assert store.load() == []
    entries = [Owned("a", "s1", "default", 1.0), Owned("b", "s1", "ops", 2.0)]
    for entry in entries:
        store.add(entry)
    assert JsonlOwnerStore(tmp_path / "deep" / "owners.jsonl").load() == entries
    # What a session waits for: the last line about it counts.
    call = {"call_id": "c1", "tool": "deploy", "arguments": {"target": "prod"}}
    question = {"session_id": "s1", "message": "Which account?"}
    store.waiting("a", "s1", [call], None)
    store.waiting("b", "s1", [], question)
    store.waiting("a", "s1", [], None)
    store.waiting("nobody", "s9", [call], None)  # not an owned session: ignored
    loaded = {(o.tenant, o.session): o for o in store.load()}
    assert set(loaded) == {("a", "s1"), ("b", "s1")}
    assert (loaded["a", "s1"].pending, loaded["a", "s1"].question) == ([], None)
    assert (loaded["b", "s1"].pending, loaded["b", "s1"].question) == ([], question)


def test_a_line_cut_short_by_a_crash_is_ignored_and_a_bad_line_is_an_error(tmp_path) -> None:
    path = tmp_path / "owners.jsonl"
    store = JsonlOwnerStore(path)
    store.add(Owned("a", "s1", "default", 1.0))
    with path.open("a") as file:
        file.write('{"tenant": "a", "sess')
    assert [o.session for o in store.load()] == ["s1"]
    path.write_text(
        '{"tenant": "a"}\n{"tenant": "a", "session": "s", "agent": "x", "created": 1}\n'
    )
    with pytest.raises(ConfigError, match="Line 1 of the session owners file"):
        store.load()


def events(text: str) -> list[dict[str, object]]:
    return [json.loads(f["data"]) for f in parse_sse(text)]


def test_a_run_suspended_for_approval_resumes_on_a_restarted_server(
    serve, client, tmp_path
) -> None:
    first = serve(settings=settings(tmp_path))
    with client(first, A_KEY) as a:
        asked = events(a.post("/v1/sessions/d/runs", json={"prompt": "ship", "agent": "ops"}).text)
    call_id = next(e for e in asked if e["type"] == "approval_request")["call_id"]
    first.stop()

    second = serve(settings=settings(tmp_path))
    with client(second, A_KEY) as a, client(second, B_KEY) as b:
        assert b.get("/v1/approvals").json()["approvals"] == []
        waiting = a.get("/v1/approvals").json()["approvals"]
        assert [(p["session_id"], p["call_id"], p["tool"]) for p in waiting] == [
            ("d", call_id, "deploy")
        ]
        resumed = events(
            a.post("/v1/sessions/d/approvals", json={"decisions": {call_id: "allow"}}).text
        )
        assert resumed[-1]["outcome"] == "completed"
        assert resumed[-1]["output"] == "Result: deployed to prod."
        assert a.get("/v1/approvals").json()["approvals"] == []
    second.stop()

    third = serve(settings=settings(tmp_path))  # decided calls stay decided
    with client(third, A_KEY) as a:
        assert a.get("/v1/approvals").json()["approvals"] == []
        assert a.get("/v1/sessions/d").json()["pending"] == []
