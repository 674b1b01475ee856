"""The tenant boundary: keys map to tenants, and a tenant can neither read, list,
continue nor cancel another's sessions and runs, by any route."""

from __future__ import annotations

import json
import logging
import re

import pytest
from starlette.routing import Route

from tether_serve import ApiKey, ServeSettings, settings_from_table
from tether_serve.testing import parse_sse

A_KEY, B_KEY = "key-of-tenant-a-0123456789", "key-of-tenant-b-9876543210"
SECRET = "tenant-a-private-prompt"


def two_tenants(**extra: object) -> ServeSettings:
    return ServeSettings(
        keys=[ApiKey.plain("a", A_KEY), ApiKey.plain("b", B_KEY)],
        **extra,  # type: ignore[arg-type]
    )


def bodies(a_session: str, call_id: str) -> dict[tuple[str, str], object]:
    """A request body per route and method; a new route fails the walk until added here."""
    user = {"id": "u", "role": "user", "content": "continue " + SECRET}
    return {
        ("GET", "/"): None,
        ("GET", "/healthz"): None,
        ("GET", "/v1/agents"): None,
        ("GET", "/v1/sessions"): None,
        ("POST", "/v1/sessions"): {"id": a_session},
        ("GET", "/v1/sessions/{session_id}"): None,
        ("POST", "/v1/sessions/{session_id}/runs"): {"prompt": "read me your history"},
        ("POST", "/v1/sessions/{session_id}/approvals"): {"decisions": {call_id: "allow"}},
        ("POST", "/v1/sessions/{session_id}/answers"): {"answer": "business"},
        ("GET", "/v1/approvals"): None,
        ("GET", "/v1/questions"): None,
        ("GET", "/v1/runs"): None,
        ("GET", "/v1/runs/{run_id}"): None,
        ("GET", "/v1/runs/{run_id}/events"): None,
        ("GET", "/v1/runs/{run_id}/trace"): None,
        ("POST", "/v1/runs/{run_id}/cancel"): None,
        ("POST", "/v1/agents/{agent}/ag-ui"): {
            "threadId": a_session,
            "runId": "b-run",
            "messages": [user],
            "resume": [{"interruptId": call_id, "status": "resolved", "payload": True}],
        },
        ("POST", "/v1/agents/{agent}/ui-message-stream"): {
            "id": a_session,
            "messages": [
                {"id": "u", "role": "user", "parts": [{"type": "text", "text": "continue"}]},
                {
                    "id": "a",
                    "role": "assistant",
                    "parts": [
                        {"type": "tool-deploy", "approval": {"id": call_id, "approved": True}}
                    ],
                },
            ],
        },
    }


def test_tenant_b_cannot_reach_tenant_a_by_any_route(serve, client, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    live = serve(settings=two_tenants())
    with client(live, A_KEY) as a:
        first = [
            json.loads(f["data"])
            for f in parse_sse(
                a.post("/v1/sessions/a-session/runs", json={"prompt": SECRET, "agent": "ops"}).text
            )
        ]
        call_id = next(e for e in first if e["type"] == "approval_request")["call_id"]
        a_run = a.get("/v1/runs").json()["runs"][0]["id"]
        before = a.get("/v1/sessions/a-session").json()

    hub = live.server.hub
    known = bodies("a-session", call_id)
    walked = set()
    with client(live, B_KEY) as b:
        routes = [r for r in live.app.routes if isinstance(r, Route)]
        assert len(routes) == len(live.app.routes)
        for route in sorted(routes, key=lambda r: ("GET" not in r.methods, r.path)):
            for method in sorted(route.methods - {"HEAD"}):  # GET (reads) before POST
                key = (method, route.path)
                assert key in known, f"route {key} is not covered by the isolation walk"
                walked.add(key)
                path = route.path.format(session_id="a-session", run_id=a_run, agent="ops")
                body = known[key]
                response = (
                    b.request(method, path, json=body)
                    if body is not None
                    else b.request(method, path)
                )
                text = response.text
                assert SECRET not in text, key
                if response.status_code == 404:  # exactly what an unknown id gets
                    unknown = path.replace(a_run, "0" * 32).replace("a-session", "no-such")
                    again = (
                        b.request(method, unknown, json=body)
                        if body is not None
                        else b.request(method, unknown)
                    )
                    assert again.status_code == 404, key
                    assert (
                        text.replace(a_run, "0" * 32).replace("a-session", "no-such") == again.text
                    )
                else:
                    assert a_run not in text, key
                if "{run_id}" in route.path:
                    assert response.status_code == 404, key
                if route.path in (
                    "/v1/sessions/{session_id}",
                    "/v1/sessions/{session_id}/approvals",
                    "/v1/sessions/{session_id}/answers",
                ):
                    # Session ids are per tenant: until B makes its own "a-session", A's is 404.
                    assert response.status_code == 404 or hub.session("b", "a-session"), key
                assert response.status_code != 403, key
        listed = b.get("/v1/sessions").json()["sessions"]
        assert SECRET not in json.dumps(listed)
        assert {s["id"] for s in listed} == {"a-session"}  # B's own, made by its POSTs above
        assert a_run not in json.dumps(listed)
        assert a_run not in json.dumps(b.get("/v1/runs").json())
    assert walked == set(known)

    # A's session, run and pending approval are as they were.
    with client(live, A_KEY) as a:
        after = a.get("/v1/sessions/a-session").json()
        assert after["history"] == before["history"]
        assert [p["call_id"] for p in a.get("/v1/approvals").json()["approvals"]] == [call_id]
        assert a.get(f"/v1/runs/{a_run}").json()["status"] == "suspended"
    assert hub.session("a", "a-session").pending
    # No key reached a log line.
    assert A_KEY not in caplog.text and B_KEY not in caplog.text


def test_requests_without_a_valid_key_get_401_and_no_data(serve, client) -> None:
    live = serve(settings=two_tenants())
    with client(live) as anonymous, client(live, "wrong-key") as wrong:
        for http in (anonymous, wrong):
            response = http.get("/v1/sessions")
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
    with client(live) as page:
        assert page.get("/").status_code == 200  # the page itself asks for the key


def test_rate_limit_per_key_answers_429_with_retry_after(serve, client) -> None:
    live = serve(settings=two_tenants(rate_per_minute=1.0, rate_burst=3))
    with client(live, A_KEY) as a, client(live, B_KEY) as b:
        codes = [a.get("/v1/sessions").status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
        limited = a.get("/v1/sessions")
        assert int(limited.headers["retry-after"]) >= 1
        assert b.get("/v1/sessions").status_code == 200  # another key is not limited


def test_concurrent_runs_per_key_are_limited(serve, client) -> None:
    live = serve(settings=two_tenants(max_concurrent_runs=0))
    with client(live, A_KEY) as a:
        response = a.post("/v1/sessions/s/runs", json={"prompt": "hi"})
    assert response.status_code == 429
    assert "runs going" in response.json()["error"]["message"]


def test_request_bodies_over_the_limit_are_refused(serve, client) -> None:
    live = serve(settings=two_tenants(max_body_bytes=200))
    with client(live, A_KEY) as a:
        response = a.post("/v1/sessions/s/runs", json={"prompt": "x" * 500})
    assert response.status_code == 413
    assert live.server.hub.sessions == {}


def test_cors_allows_only_configured_origins(serve, client) -> None:
    live = serve(settings=two_tenants(cors_origins=["https://app.example"]))
    with client(live) as http:
        ok = http.options(
            "/v1/sessions",
            headers={"origin": "https://app.example", "access-control-request-method": "GET"},
        )
        other = http.options(
            "/v1/sessions",
            headers={"origin": "https://evil.example", "access-control-request-method": "GET"},
        )
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers


def test_keys_come_from_the_environment_or_a_hash_and_never_from_the_file() -> None:
    digest = "a" * 64
    settings = settings_from_table(
        {"keys": [{"tenant": "x", "key_env": "X_KEY"}, {"tenant": "y", "key_sha256": digest}]},
        env={"X_KEY": "the-x-key"},
    )
    assert [k.tenant for k in settings.keys] == ["x", "y"]
    assert "the-x-key" not in repr(settings)
    assert settings.host == "127.0.0.1"
    with pytest.raises(Exception, match="X_KEY is not set"):
        settings_from_table({"keys": [{"tenant": "x", "key_env": "X_KEY"}]}, env={})
    with pytest.raises(Exception, match="never goes in the file"):
        settings_from_table({"keys": [{"tenant": "x", "key": "plain"}]}, env={})
    with pytest.raises(Exception, match=re.escape("unknown keys ['hots']")):
        settings_from_table({"hots": "0.0.0.0"})
