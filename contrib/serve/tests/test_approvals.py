"""People in the loop: a call a rule asks about suspends the run; the pending call is
shown in each protocol's stream and listed by endpoint; a decision resumes the run. A
question for a person (``NeedsHuman``) is shown too, and the answer continues."""

from __future__ import annotations

import json
from typing import Any

import tether
from tether import NeedsHuman
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_serve import session_is_valid
from tether_serve.testing import parse_sse


def test_a_pending_call_is_listed_and_approving_it_resumes_the_run(serve, client) -> None:
    live = serve()
    with client(live) as http:
        first = parse_sse(
            http.post("/v1/sessions/d1/runs", json={"prompt": "Deploy", "agent": "ops"}).text
        )
        events = [json.loads(f["data"]) for f in first]
        request = next(e for e in events if e["type"] == "approval_request")
        assert request["tool"] == "deploy" and request["arguments"] == {"target": "prod"}
        assert events[-1]["type"] == "done" and events[-1]["outcome"] == "suspended"
        assert "tool_end" not in [e["type"] for e in events]  # nothing ran yet

        (listed,) = http.get("/v1/approvals").json()["approvals"]
        assert listed["call_id"] == request["call_id"] and listed["session_id"] == "d1"

        resumed = parse_sse(
            http.post(
                "/v1/sessions/d1/approvals", json={"decisions": {request["call_id"]: "allow"}}
            ).text
        )
        after = [json.loads(f["data"]) for f in resumed]
        tool_end = next(e for e in after if e["type"] == "tool_end")
        assert tool_end["content"] == "deployed to prod"
        assert after[-1]["outcome"] == "completed"
        assert http.get("/v1/approvals").json()["approvals"] == []
    assert session_is_valid(live.server.hub.session("local", "d1"))


def test_denying_tells_the_model_and_the_tool_does_not_run(serve, client) -> None:
    live = serve()
    with client(live) as http:
        first = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post("/v1/sessions/d2/runs", json={"prompt": "Deploy", "agent": "ops"}).text
            )
        ]
        call_id = next(e for e in first if e["type"] == "approval_request")["call_id"]
        after = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post("/v1/sessions/d2/approvals", json={"decisions": {call_id: "deny"}}).text
            )
        ]
    assert "deployed to prod" not in json.dumps(after)
    assert after[-1]["outcome"] == "completed"


def test_a_decision_must_cover_every_pending_call(serve, client) -> None:
    live = serve()
    with client(live) as http:
        http.post("/v1/sessions/d3/runs", json={"prompt": "Deploy", "agent": "ops"})
        wrong = http.post("/v1/sessions/d3/approvals", json={"decisions": {"call_99": True}})
        assert wrong.status_code == 422
        assert "call_99" in wrong.json()["error"]["message"]
        nothing = http.post("/v1/sessions/nope/approvals", json={"decisions": {"x": True}})
        assert nothing.status_code == 404


def test_ag_ui_shows_an_interrupt_and_resumes_on_a_resume_entry(serve, client) -> None:
    live = serve()
    base = {"threadId": "t-ops", "tools": [], "context": [], "state": {}, "forwardedProps": {}}
    with client(live) as http:
        first = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/ops/ag-ui",
                    json={
                        **base,
                        "runId": "r1",
                        "messages": [{"id": "u1", "role": "user", "content": "Deploy"}],
                    },
                ).text
            )
        ]
        finished = first[-1]
        assert finished["type"] == "RUN_FINISHED"
        (interrupt,) = finished["outcome"]["interrupts"]
        assert interrupt["reason"] == "tool_approval"
        assert [e["toolCallName"] for e in first if e["type"] == "TOOL_CALL_START"] == ["deploy"]
        resume = [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ]
        after = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/ops/ag-ui",
                    json={**base, "runId": "r2", "messages": [], "resume": resume},
                ).text
            )
        ]
    result = next(e for e in after if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "deployed to prod"
    assert after[-1]["outcome"] == {"type": "success"}


def test_ui_message_stream_asks_for_approval_and_takes_the_answer_in_the_messages(
    serve, client
) -> None:
    live = serve()
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Deploy"}]}
    with client(live) as http:
        first = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/ops/ui-message-stream", json={"id": "c-ops", "messages": [user]}
                ).text
            )[:-1]
        ]
        ask = next(p for p in first if p["type"] == "tool-approval-request")
        assert first[-1]["finishReason"] == "tool-calls"
        assistant = {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-deploy",
                    "toolCallId": ask["toolCallId"],
                    "state": "approval-responded",
                    "input": {"target": "prod"},
                    "approval": {"id": ask["approvalId"], "approved": True},
                }
            ],
        }
        after = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/ops/ui-message-stream",
                    json={"id": "c-ops", "messages": [user, assistant]},
                ).text
            )[:-1]
        ]
    output = next(p for p in after if p["type"] == "tool-output-available")
    assert output["output"] == "deployed to prod"


def test_a_session_stays_with_the_agent_that_made_it(serve, client) -> None:
    live = serve()
    with client(live) as http:
        http.post("/v1/sessions/mine/runs", json={"prompt": "Deploy", "agent": "ops"})
        other = http.post("/v1/sessions/mine/runs", json={"prompt": "hi", "agent": "default"})
    assert other.status_code == 409
    assert "belongs to agent 'ops'" in other.json()["error"]["message"]
    assert len(live.server.hub.session("local", "mine").runs) == 1
    with client(live) as http:  # without naming an agent, the session's own goes on
        http.post("/v1/sessions/mine/approvals", json={"decisions": {"call_1": "deny"}})
        again = http.post("/v1/sessions/mine/runs", json={"prompt": "Deploy again"})
    assert '"tool":"deploy"' in again.text


@tether.tool
def book_flight(city: str) -> str:
    """Book a flight."""
    raise NeedsHuman("no payment method on file", user_message="Which card should I use?")


def question_model(request: Any) -> Reply:
    last = request.messages[-1]
    if last.role == "user" and "card" in last.text:
        return Reply(text=f"Booked with the {last.text}.")
    return Reply(tool_calls=[call("book_flight", city="Oslo")])


def test_a_question_for_a_person_is_shown_and_the_answer_continues_the_session(
    serve, client
) -> None:
    agent = tether.Agent(
        ScriptedProvider(handler=question_model), tools=[book_flight], config=Config()
    )
    live = serve({"default": agent})
    base = {"threadId": "q", "tools": [], "context": [], "state": {}, "forwardedProps": {}}
    user = {"id": "u", "role": "user", "content": "Book Oslo"}
    with client(live) as http:
        first = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/default/ag-ui", json={**base, "runId": "r1", "messages": [user]}
                ).text
            )
        ]
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        assert interrupt["reason"] == "needs_human"
        assert interrupt["message"] == "Which card should I use?"
        resume = [
            {
                "interruptId": interrupt["id"],
                "status": "resolved",
                "payload": {"answer": "blue card"},
            }
        ]
        after = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/default/ag-ui",
                    json={**base, "runId": "r2", "messages": [], "resume": resume},
                ).text
            )
        ]
        text = "".join(e["delta"] for e in after if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "Booked with the blue card."
        tether_events = [
            json.loads(f["data"])
            for f in parse_sse(http.post("/v1/sessions/q2/runs", json={"prompt": "Book Oslo"}).text)
        ]
        ui = [
            json.loads(f["data"])
            for f in parse_sse(
                http.post(
                    "/v1/agents/default/ui-message-stream",
                    json={
                        "id": "q3",
                        "messages": [
                            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "Book"}]}
                        ],
                    },
                ).text
            )[:-1]
        ]
    question = next(e for e in tether_events if e["type"] == "needs_human")
    assert question["message"] == "Which card should I use?"
    assert tether_events[-1]["outcome"] == "needs_human"
    assert {"type": "data-needs-human", "data": {"message": "Which card should I use?"}} in ui
    assert session_is_valid(live.server.hub.session("local", "q"))
