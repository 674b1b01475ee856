"""The one event stream, in three protocols, over real HTTP."""

from __future__ import annotations

import json

from tether_serve import session_is_valid
from tether_serve.testing import parse_sse as sse_events


def test_tether_events_stream_as_sse_with_ids_and_the_documented_schema(serve, client) -> None:
    live = serve()
    with client(live) as http:
        response = http.post("/v1/sessions/s1/runs", json={"prompt": "Weather in Paris?"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = sse_events(response.text)
    kinds = [f["event"] for f in frames]
    assert kinds[0] == "run_start" and kinds[-1] == "done"
    assert kinds.index("tool_start") < kinds.index("tool_end") < len(kinds) - 1
    assert [int(f["id"]) for f in frames] == list(range(1, len(frames) + 1))
    data = [json.loads(f["data"]) for f in frames]
    assert all(d["type"] == f["event"] for d, f in zip(data, frames, strict=True))
    tool_end = next(d for d in data if d["type"] == "tool_end")
    assert tool_end["content"] == "Sunny in Paris, 21 C"
    text = "".join(d["text"] for d in data if d["type"] == "text_delta")
    assert text.endswith("The forecast: Sunny in Paris, 21 C. Enjoy!")
    assert data[-1]["outcome"] == "completed"
    record = live.server.hub.session("local", "s1")
    assert record is not None and session_is_valid(record)


def test_last_event_id_resumes_the_stream_after_that_event(serve, client) -> None:
    live = serve()
    with client(live) as http:
        first = sse_events(http.post("/v1/sessions/s1/runs", json={"prompt": "hi"}).text)
        run_id = json.loads(first[-1]["data"])["run_id"]
        server_run = live.server.hub.runs_of("local")[0].id
        again = http.get(f"/v1/runs/{server_run}/events", headers={"last-event-id": "3"})
    rest = sse_events(again.text)
    assert [f["id"] for f in rest] == [f["id"] for f in first[3:]]
    assert [f["data"] for f in rest] == [f["data"] for f in first[3:]]
    assert json.loads(rest[-1]["data"])["run_id"] == run_id


def test_ag_ui_stream_carries_run_text_tool_step_and_state_events(serve, client) -> None:
    live = serve()
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "Weather in Paris?"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    with client(live) as http:
        response = http.post("/v1/agents/default/ag-ui", json=body)
    events = [json.loads(f["data"]) for f in sse_events(response.text)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert events[0]["threadId"] == "t1" and events[0]["runId"] == "r1"
    for kind in (
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
    ):
        assert kind in kinds, kind
    order = [
        kinds.index(k)
        for k in ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT")
    ]
    assert order == sorted(order)
    args = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"city": "Paris"}
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "Sunny in Paris, 21 C"
    assert events[-1]["outcome"] == {"type": "success"}
    # every message that starts, ends, before the run finishes
    starts = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    ends = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"]
    assert starts == ends and len(starts) == 2


def test_ui_message_stream_has_the_header_parts_and_done(serve, client) -> None:
    live = serve()
    body = {
        "id": "chat1",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}],
        "trigger": "submit-message",
    }
    with client(live) as http:
        response = http.post("/v1/agents/default/ui-message-stream", json=body)
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    frames = sse_events(response.text)
    assert frames[-1]["data"] == "[DONE]"
    parts = [json.loads(f["data"]) for f in frames[:-1]]
    kinds = [p["type"] for p in parts]
    assert kinds[0] == "start" and kinds[-1] == "finish"
    order = [
        kinds.index(k)
        for k in (
            "text-start",
            "text-delta",
            "text-end",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
            "tool-output-available",
        )
    ]
    assert order == sorted(order)
    assert kinds.count("start-step") == kinds.count("finish-step") == 2
    available = next(p for p in parts if p["type"] == "tool-input-available")
    assert available["input"] == {"city": "Paris"} and available["toolName"] == "get_weather"
    assert parts[-1]["finishReason"] == "stop"


def test_unknown_protocol_is_a_clear_error(serve, client) -> None:
    live = serve()
    with client(live) as http:
        response = http.post("/v1/sessions/s1/runs?protocol=grpc", json={"prompt": "hi"})
    assert response.status_code == 422
    assert "ag-ui" in response.json()["error"]["message"]
