"""A run's trace over HTTP: the events it streamed, and the run log's tree of it."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tether_serve import ServeSettings, settings_from_table
from tether_serve.testing import parse_sse


def _walk(span: dict[str, object]) -> list[dict[str, object]]:
    children = span["children"]
    assert isinstance(children, list)
    return [span, *(s for child in children for s in _walk(child))]


def trace_once_recorded(http: httpx.Client, run_id: str, deadline_s: float = 60.0) -> dict:
    """The run's trace, asked again until the run log has written the run (it records a
    run on a writer thread just after it ends)."""
    end = time.monotonic() + deadline_s
    while True:
        response = http.get(f"/v1/runs/{run_id}/trace")
        assert response.status_code == 200
        trace = response.json()
        if trace["trace"] is not None or time.monotonic() > end:
            return trace
        time.sleep(0.2)


def test_a_runs_trace_has_its_streamed_events_and_the_run_logs_tree(
    serve, client, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("TETHER_RUN_LOG", str(tmp_path / "runs.sqlite"))
    live = serve()
    with client(live) as http:
        streamed = parse_sse(http.post("/v1/sessions/s1/runs", json={"prompt": "weather?"}).text)
        run_id = http.get("/v1/runs").json()["runs"][0]["id"]
        trace = trace_once_recorded(http, run_id)
    assert trace["run"]["id"] == run_id and trace["run"]["status"] == "completed"
    # The events are exactly the ones streamed, numbered like the SSE ids.
    assert [(str(e.pop("seq")), e) for e in trace["events"]] == [
        (f["id"], json.loads(f["data"])) for f in streamed
    ]
    # The tree is the run log's (as `tether trace RUN --json` prints it): one run, two turns, the tool call with its arguments.
    tree = trace["trace"]
    assert trace["trace_note"] is None
    spans = _walk(tree)
    assert tree["kind"] == "run" and tree["status"] == "ok"
    assert [s["title"] for s in spans if s["kind"] == "turn"] == ["turn 1", "turn 2"]
    tool = next(s for s in spans if s["kind"] == "tool")
    assert tool["title"] == "get_weather"
    assert json.loads(tool["details"]["arguments"]) == {"city": "Paris"}
    assert tool["status"] == "ok"


def test_with_the_run_log_off_the_trace_is_the_events_and_says_why(serve, client) -> None:
    live = serve(settings=ServeSettings(run_log="off"))
    with client(live) as http:
        http.post("/v1/sessions/s1/runs", json={"prompt": "weather?"})
        run_id = http.get("/v1/runs").json()["runs"][0]["id"]
        trace = http.get(f"/v1/runs/{run_id}/trace").json()
    assert trace["trace"] is None
    assert "run log is off" in trace["trace_note"]
    assert trace["events"][-1]["type"] == "done"
    assert [e["seq"] for e in trace["events"]] == list(range(1, len(trace["events"]) + 1))


def test_a_run_log_without_the_run_says_so(serve, client, tmp_path) -> None:
    # Runs are recorded elsewhere (here: not at all), the trace is read from another file.
    live = serve(settings=ServeSettings(run_log=str(tmp_path / "other.sqlite")))
    with client(live) as http:
        http.post("/v1/sessions/s1/runs", json={"prompt": "weather?"})
        run_id = http.get("/v1/runs").json()["runs"][0]["id"]
        trace = http.get(f"/v1/runs/{run_id}/trace").json()
    assert trace["trace"] is None
    assert "no such run" in trace["trace_note"]


def test_an_unknown_run_has_no_trace(serve, client) -> None:
    live = serve()
    with client(live) as http:
        response = http.get(f"/v1/runs/{'0' * 32}/trace")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found"


@pytest.mark.parametrize(
    ("value", "expected"), [("off", "off"), ("/x/runs.sqlite", "/x/runs.sqlite")]
)
def test_run_log_is_a_serve_setting(value: str, expected: str) -> None:
    assert settings_from_table({"run_log": value}).run_log == expected


def test_a_trace_that_takes_too_long_is_given_up_with_a_note(
    serve, client, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("TETHER_RUN_LOG", str(tmp_path / "runs.sqlite"))
    live = serve()
    live.server.traces.deadline_s = 0.001  # no interpreter starts that fast
    with client(live) as http:
        http.post("/v1/sessions/s1/runs", json={"prompt": "weather?"})
        run_id = http.get("/v1/runs").json()["runs"][0]["id"]
        response = http.get(f"/v1/runs/{run_id}/trace")
    assert response.status_code == 200
    assert response.json()["trace"] is None
    assert "took over 0.001 s" in response.json()["trace_note"]
    assert response.json()["events"][-1]["type"] == "done"
