"""The AG-UI protocol, with the official ``ag-ui-protocol`` types and encoder.

Mapping: the run is ``RUN_STARTED`` … ``RUN_FINISHED`` (outcome ``success``,
``interrupt`` when tool calls wait for approval — one interrupt per call, its id the
call id, reason ``tool_approval`` — or ``cancelled``) or ``RUN_ERROR``. Each stretch of
answer text is a ``TEXT_MESSAGE_START/CONTENT/END`` message; each tool call is
``TOOL_CALL_START``, one ``TOOL_CALL_ARGS`` with the arguments as JSON, ``TOOL_CALL_END``
and, when it has run, ``TOOL_CALL_RESULT``. Each model call is a step (``STEP_STARTED`` /
``STEP_FINISHED`` named ``model_call_<n>``) and so is each step of a plan; the shared
state (``STATE_SNAPSHOT`` then ``STATE_DELTA`` JSON patches) holds the session id, the
token usage and the cost so far.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import (
    CustomEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import BaseEvent
from ag_ui.encoder import EventEncoder

__all__ = ["AgUiEncoder"]


class AgUiEncoder:
    def __init__(self, *, thread_id: str, run_id: str) -> None:
        self.headers: dict[str, str] = {}
        self.thread_id, self.run_id = thread_id, run_id
        self._encoder = EventEncoder()
        self._started = False
        self._text_id: str | None = None
        self._messages = 0
        self._model_calls = 0
        self._step_open = False
        self._interrupts: list[Interrupt] = []

    def encode(self, event: dict[str, Any]) -> list[str]:
        out: list[BaseEvent] = []
        if not self._started:
            self._started = True
            out.append(RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))
            state: dict[str, Any] = {
                "session_id": self.thread_id,
                "usage": {},
                "cost": None,
                "turns": 0,
            }
            out.append(StateSnapshotEvent(snapshot=state))
        kind = event["type"]
        if kind == "text_delta":
            self._open_step(out)
            if self._text_id is None:
                self._messages += 1
                self._text_id = f"{self.run_id}-m{self._messages}"
                out.append(TextMessageStartEvent(message_id=self._text_id, role="assistant"))
            out.append(TextMessageContentEvent(message_id=self._text_id, delta=event["text"]))
        elif kind == "turn_end":
            self._open_step(out)
            self._close_text(out)
            self._model_calls += 1
            out.append(StepFinishedEvent(step_name=f"model_call_{self._model_calls}"))
            self._step_open = False
            out.append(StateDeltaEvent(delta=_state_patch(event, self._model_calls)))
        elif kind == "tool_start":
            self._close_text(out)
            out.extend(self._tool_call(event["call_id"], event["name"], event["arguments"]))
        elif kind == "tool_end":
            out.append(
                ToolCallResultEvent(
                    message_id=f"{self.run_id}-{event['call_id']}-result",
                    tool_call_id=event["call_id"],
                    content=_text_of(event["content"]),
                    role="tool",
                )
            )
        elif kind == "step_start":
            out.append(StepStartedEvent(step_name=f"plan_step_{event['index']}"))
        elif kind == "step_end":
            out.append(StepFinishedEvent(step_name=f"plan_step_{event['index']}"))
        elif kind == "approval_request":
            self._close_text(out)
            out.extend(self._tool_call(event["call_id"], event["tool"], event["arguments"]))
            out.append(CustomEvent(name="tether.approval_request", value=event))
            self._interrupts.append(
                Interrupt(
                    id=event["call_id"],
                    reason="tool_approval",
                    tool_call_id=event["call_id"],
                    message=f"Allow {event['tool']}? (permission rule {event.get('rule')!r})",
                )
            )
        elif kind == "needs_human":
            self._close_text(out)
            out.append(CustomEvent(name="tether.needs_human", value=event))
            self._interrupts.append(
                Interrupt(
                    id=f"{self.run_id}-question", reason="needs_human", message=event["message"]
                )
            )
        elif kind == "done":
            self._close_text(out)
            out.append(self._finished(event))
        elif kind == "error":
            self._close_text(out)
            out.append(RunErrorEvent(message=event["error"], code=event.get("error_type")))
        elif kind not in ("run_start", "thinking_delta"):
            out.append(CustomEvent(name=f"tether.{kind}", value=event))
        return [self._encoder.encode(item) for item in out]

    def trailer(self) -> list[str]:
        return []

    def _open_step(self, out: list[BaseEvent]) -> None:
        if not self._step_open:
            self._step_open = True
            out.append(StepStartedEvent(step_name=f"model_call_{self._model_calls + 1}"))

    def _close_text(self, out: list[BaseEvent]) -> None:
        if self._text_id is not None:
            out.append(TextMessageEndEvent(message_id=self._text_id))
            self._text_id = None

    def _tool_call(self, call_id: str, name: str, arguments: Any) -> list[BaseEvent]:
        return [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name),
            ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(arguments)),
            ToolCallEndEvent(tool_call_id=call_id),
        ]

    def _finished(self, event: dict[str, Any]) -> RunFinishedEvent:
        outcome: Any
        if self._interrupts:
            outcome = RunFinishedInterruptOutcome(interrupts=self._interrupts)
        elif event.get("outcome") == "cancelled":
            outcome = RunFinishedCancelledOutcome()
        else:
            outcome = RunFinishedSuccessOutcome()
        result = {
            "outcome": event.get("outcome"),
            "output": event.get("output"),
            "cost": event.get("cost"),
            "usage": event.get("usage"),
            "error": event.get("error"),
        }
        return RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, result=result, outcome=outcome
        )


def _state_patch(event: dict[str, Any], turns: int) -> list[dict[str, Any]]:
    return [
        {"op": "replace", "path": "/usage", "value": event.get("usage") or {}},
        {"op": "replace", "path": "/cost", "value": event.get("cost")},
        {"op": "replace", "path": "/turns", "value": turns},
    ]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [block.get("text", "") for block in content if isinstance(block, dict)]
    return "".join(parts) if any(parts) else json.dumps(content)
