"""Questions a tool asks a person mid-run (``NeedsHuman``): listed, answered by endpoint,
and the answer carries the conversation on."""

from __future__ import annotations

import json
from typing import Any

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_serve import ApiKey, ServeSettings
from tether_serve.testing import parse_sse

QUESTION = "Which account should I bill: personal or business?"


@tether.tool
def bill(amount: int) -> str:
    """Bill an amount to the customer's account."""
    raise tether.NeedsHuman("the account type is unknown", user_message=QUESTION)


def billing_script(request: Any) -> Reply:
    """Bills once; once a person has answered, confirms with their answer."""
    texts = [
        b.text
        for m in request.messages
        if m.role == "user"
        for b in m.content
        if getattr(b, "type", None) == "text"
    ]
    if len(texts) > 1:
        return Reply(text=f"Billed to the {texts[-1]} account.")
    return Reply(text="Billing.", tool_calls=[call("bill", amount=30)])


def billing_agents() -> dict[str, tether.Agent]:
    agent = tether.Agent(ScriptedProvider(handler=billing_script), tools=[bill], config=Config())
    return {"default": agent}


def events_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(f["data"]) for f in parse_sse(text)]


def test_a_question_is_listed_and_its_answer_resumes_the_conversation(serve, client) -> None:
    live = serve(billing_agents())
    with client(live) as http:
        first = events_of(http.post("/v1/sessions/s1/runs", json={"prompt": "bill me"}).text)
        assert [e["message"] for e in first if e["type"] == "needs_human"] == [QUESTION]
        assert first[-1]["outcome"] == "needs_human"

        questions = http.get("/v1/questions").json()["questions"]
        assert [(q["session_id"], q["message"]) for q in questions] == [("s1", QUESTION)]
        assert questions[0]["run_id"] == http.get("/v1/runs").json()["runs"][0]["id"]
        assert http.get("/v1/sessions/s1").json()["question"]["message"] == QUESTION

        answered = events_of(http.post("/v1/sessions/s1/answers", json={"answer": "business"}).text)
        assert answered[-1]["type"] == "done" and answered[-1]["outcome"] == "completed"
        assert answered[-1]["output"] == "Billed to the business account."

        assert http.get("/v1/questions").json()["questions"] == []
        assert http.get("/v1/sessions/s1").json()["question"] is None
        again = http.post("/v1/sessions/s1/answers", json={"answer": "personal"})
        assert again.status_code == 409
        assert again.json()["error"]["type"] == "nothing_asked"


def test_an_answer_streams_in_the_protocol_asked_for(serve, client) -> None:
    live = serve(billing_agents())
    with client(live) as http:
        http.post("/v1/sessions/s1/runs", json={"prompt": "bill me"})
        response = http.post("/v1/sessions/s1/answers?protocol=ag-ui", json={"answer": "personal"})
    kinds = [json.loads(f["data"])["type"] for f in parse_sse(response.text)]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_CONTENT" in kinds


def test_an_empty_answer_is_refused_and_the_question_stays(serve, client) -> None:
    live = serve(billing_agents())
    with client(live) as http:
        http.post("/v1/sessions/s1/runs", json={"prompt": "bill me"})
        for body in ({}, {"answer": "  "}, {"answer": 3}):
            response = http.post("/v1/sessions/s1/answers", json=body)
            assert response.status_code == 422, body
            assert '{"answer"' in response.json()["error"]["message"]
        assert len(http.get("/v1/questions").json()["questions"]) == 1


def test_answering_an_unknown_session_is_404(serve, client) -> None:
    live = serve(billing_agents())
    with client(live) as http:
        response = http.post("/v1/sessions/nope/answers", json={"answer": "x"})
    assert response.status_code == 404


def test_another_tenant_neither_sees_nor_answers_a_question(serve, client) -> None:
    a_key, b_key = "questions-key-a-0123456789", "questions-key-b-0123456789"
    settings = ServeSettings(keys=[ApiKey.plain("a", a_key), ApiKey.plain("b", b_key)])
    live = serve(billing_agents(), settings)
    with client(live, a_key) as a, client(live, b_key) as b:
        a.post("/v1/sessions/s1/runs", json={"prompt": "bill me"})
        assert b.get("/v1/questions").json()["questions"] == []
        assert b.post("/v1/sessions/s1/answers", json={"answer": "business"}).status_code == 404
        assert [q["message"] for q in a.get("/v1/questions").json()["questions"]] == [QUESTION]
