"""Properties of the protocol encoders over any run's event sequence: messages and
steps are well nested, tool calls are complete and in order, and replaying a prefix
(what ``Last-Event-ID`` does) yields exactly the rest of the stream."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tether_serve.protocols import PROTOCOLS, encoder_for

TEXT = st.text(min_size=1, max_size=6)


@st.composite
def runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A plausible run: model calls with text, tool calls and their results, then an end."""
    events: list[dict[str, Any]] = [{"type": "run_start", "run_id": "r", "session_id": "s"}]
    calls = 0
    for _ in range(draw(st.integers(1, 4))):
        for text in draw(st.lists(TEXT, max_size=4)):
            events.append({"type": "text_delta", "text": text})
        events.append({"type": "turn_end", "usage": {"input_tokens": 1}, "cost": None})
        for _ in range(draw(st.integers(0, 2))):
            calls += 1
            call_id = f"call_{calls}"
            arguments = draw(st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=2))
            events.append(
                {"type": "tool_start", "call_id": call_id, "name": "t", "arguments": arguments}
            )
            events.append(
                {
                    "type": "tool_end",
                    "call_id": call_id,
                    "name": "t",
                    "is_error": draw(st.booleans()),
                    "content": "ok",
                }
            )
    ending = draw(st.sampled_from(["completed", "suspended", "needs_human", "cancelled", "error"]))
    if ending == "needs_human":
        events.append({"type": "needs_human", "message": "Which one?", "session_id": "s"})
    if ending == "suspended":
        events.append(
            {
                "type": "approval_request",
                "call_id": "call_p",
                "tool": "t",
                "arguments": {},
                "rule": "t",
                "session_id": "s",
            }
        )
    if ending == "error":
        events.append({"type": "error", "error": "boom", "error_type": "ProviderError"})
    else:
        events.append(
            {
                "type": "done",
                "outcome": ending,
                "output": "x",
                "session_id": "s",
                "usage": {},
                "cost": None,
            }
        )
    return events


def frames(protocol: str, events: list[dict[str, Any]]) -> list[list[str]]:
    encoder = encoder_for(protocol, "run", "s")
    return [encoder.encode(event) for event in events]


def payloads(chunks: list[list[str]]) -> list[dict[str, Any]]:
    out = []
    for group in chunks:
        for frame in group:
            data = [line[6:] for line in frame.split("\n") if line.startswith("data: ")]
            out.append(json.loads(data[0]))
    return out


@given(runs(), st.data())
def test_replaying_a_prefix_gives_the_rest_of_the_stream(events, data) -> None:
    for protocol in PROTOCOLS:
        whole = frames(protocol, events)
        cut = data.draw(st.integers(0, len(events)))
        encoder = encoder_for(protocol, "run", "s")
        for event in events[:cut]:
            encoder.encode(event)  # what the server discards when resuming
        assert [encoder.encode(e) for e in events[cut:]] == whole[cut:]


@given(runs())
def test_ag_ui_messages_steps_and_tool_calls_are_well_formed(events) -> None:
    out = payloads(frames("ag-ui", events))
    kinds = [e["type"] for e in out]
    assert kinds[0] == "RUN_STARTED"
    assert (
        kinds[-1] in ("RUN_FINISHED", "RUN_ERROR")
        and kinds.count("RUN_FINISHED") + kinds.count("RUN_ERROR") == 1
    )
    open_message, open_steps, calls = None, [], {}
    for event in out:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            assert open_message is None
            open_message = event["messageId"]
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] == open_message
        elif kind == "TEXT_MESSAGE_END":
            assert event["messageId"] == open_message
            open_message = None
        elif kind.startswith("TOOL_CALL_"):
            assert open_message is None
            state = calls.get(event["toolCallId"])
            expected = {
                "TOOL_CALL_START": None,
                "TOOL_CALL_ARGS": "START",
                "TOOL_CALL_END": "ARGS",
                "TOOL_CALL_RESULT": "END",
            }
            assert state == expected[kind], (kind, state)
            calls[event["toolCallId"]] = kind.removeprefix("TOOL_CALL_")
        elif kind == "STEP_STARTED":
            open_steps.append(event["stepName"])
        elif kind == "STEP_FINISHED":
            assert open_steps.pop() == event["stepName"]
    assert open_message is None
    ran = {e["call_id"] for e in events if e["type"] == "tool_end"}
    assert {c for c, s in calls.items() if s == "RESULT"} == ran
    if any(e["type"] in ("approval_request", "needs_human") for e in events):
        assert out[-1]["outcome"]["type"] == "interrupt"


@given(runs())
def test_ui_message_stream_parts_are_balanced_and_end_in_done(events) -> None:
    encoder = encoder_for("ui-message-stream", "run", "s")
    chunks = [encoder.encode(e) for e in events]
    assert encoder.trailer() == ["data: [DONE]\n\n"]
    out = payloads(chunks)
    kinds = [p["type"] for p in out]
    assert kinds[0] == "start"
    assert kinds[-1] in ("finish", "error")
    open_text, step_open = None, False
    inputs: dict[str, str] = {}
    for part in out:
        kind = part["type"]
        if kind == "start-step":
            assert not step_open
            step_open = True
        elif kind == "finish-step":
            assert step_open and open_text is None
            step_open = False
        elif kind == "text-start":
            assert open_text is None and step_open
            open_text = part["id"]
        elif kind == "text-delta":
            assert part["id"] == open_text
        elif kind == "text-end":
            assert part["id"] == open_text
            open_text = None
        elif kind == "tool-input-start":
            inputs[part["toolCallId"]] = "start"
        elif kind == "tool-input-available":
            assert inputs[part["toolCallId"]] == "start"
            inputs[part["toolCallId"]] = "available"
        elif kind in ("tool-output-available", "tool-output-error", "tool-approval-request"):
            assert inputs[part["toolCallId"]] == "available"
    assert open_text is None
    text = "".join(p["delta"] for p in out if p["type"] == "text-delta")
    assert text == "".join(e["text"] for e in events if e["type"] == "text_delta")
