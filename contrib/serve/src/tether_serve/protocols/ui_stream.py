"""The AI SDK's UI message stream protocol (``x-vercel-ai-ui-message-stream: v1``).

What the ``ai`` package's ``DefaultChatTransport`` / ``useChat`` and
``readUIMessageStream`` read: SSE frames whose data are JSON parts — ``start``, per model
call ``start-step`` … ``finish-step``, ``text-start``/``text-delta``/``text-end``,
``reasoning-*``, per tool call ``tool-input-start``, ``tool-input-delta`` (the arguments
as JSON), ``tool-input-available`` and ``tool-output-available`` (or
``tool-output-error``), ``tool-approval-request`` for a call waiting for approval (its
``approvalId`` is the call id), ``data-needs-human`` when a tool asked for a person, with the session id, usage and
cost, ``finish``, and last ``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["UiMessageStreamEncoder"]

_FINISH_REASONS = {
    "completed": "stop",
    "max_tokens": "length",
    "refusal": "content-filter",
    "suspended": "tool-calls",
}


def _part(part: dict[str, Any]) -> str:
    return f"data: {json.dumps(part, separators=(',', ':'))}\n\n"


class UiMessageStreamEncoder:
    def __init__(self, *, message_id: str) -> None:
        self.headers = {"x-vercel-ai-ui-message-stream": "v1"}
        self.message_id = message_id
        self._started = False
        self._step_open = False
        self._step_had_turn_end = False
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        self._parts = 0

    def encode(self, event: dict[str, Any]) -> list[str]:
        out: list[dict[str, Any]] = []
        if not self._started:
            self._started = True
            out.append({"type": "start", "messageId": self.message_id})
        kind = event["type"]
        if kind == "text_delta":
            self._ensure_step(out)
            self._close_reasoning(out)
            if self._text_id is None:
                self._text_id = self._next_id("text")
                out.append({"type": "text-start", "id": self._text_id})
            out.append({"type": "text-delta", "id": self._text_id, "delta": event["text"]})
        elif kind == "thinking_delta" and event.get("text"):
            self._ensure_step(out)
            if self._reasoning_id is None:
                self._reasoning_id = self._next_id("reasoning")
                out.append({"type": "reasoning-start", "id": self._reasoning_id})
            out.append(
                {"type": "reasoning-delta", "id": self._reasoning_id, "delta": event["text"]}
            )
        elif kind == "turn_end":
            self._ensure_step(out)
            self._close_text(out)
            self._step_had_turn_end = True
        elif kind == "tool_start":
            self._close_text(out)
            if not self._step_open:
                self._ensure_step(out)
                self._step_had_turn_end = True
            out.extend(_tool_input(event["call_id"], event["name"], event["arguments"]))
        elif kind == "tool_end":
            if event["is_error"]:
                out.append(
                    {
                        "type": "tool-output-error",
                        "toolCallId": event["call_id"],
                        "errorText": _text_of(event["content"]),
                    }
                )
            else:
                out.append(
                    {
                        "type": "tool-output-available",
                        "toolCallId": event["call_id"],
                        "output": event["content"],
                    }
                )
        elif kind == "approval_request":
            self._close_text(out)
            out.extend(_tool_input(event["call_id"], event["tool"], event["arguments"]))
            out.append(
                {
                    "type": "tool-approval-request",
                    "approvalId": event["call_id"],
                    "toolCallId": event["call_id"],
                }
            )
        elif kind == "needs_human":
            self._close_text(out)
            out.append({"type": "data-needs-human", "data": {"message": event["message"]}})
        elif kind == "done":
            self._close_text(out)
            self._close_step(out)
            out.append(
                {
                    "type": "finish",
                    "finishReason": _FINISH_REASONS.get(event["outcome"], "other"),
                    "messageMetadata": _metadata(event),
                }
            )
        elif kind == "error":
            self._close_text(out)
            out.append({"type": "error", "errorText": event["error"]})
        return [_part(item) for item in out]

    def trailer(self) -> list[str]:
        return ["data: [DONE]\n\n"]

    def _next_id(self, kind: str) -> str:
        self._parts += 1
        return f"{kind}-{self._parts}"

    def _ensure_step(self, out: list[dict[str, Any]]) -> None:
        if self._step_open and self._step_had_turn_end:
            self._close_step(out)
        if not self._step_open:
            self._step_open, self._step_had_turn_end = True, False
            out.append({"type": "start-step"})

    def _close_step(self, out: list[dict[str, Any]]) -> None:
        if self._step_open:
            self._close_reasoning(out)
            self._close_text(out)
            out.append({"type": "finish-step"})
            self._step_open = False

    def _close_text(self, out: list[dict[str, Any]]) -> None:
        self._close_reasoning(out)
        if self._text_id is not None:
            out.append({"type": "text-end", "id": self._text_id})
            self._text_id = None

    def _close_reasoning(self, out: list[dict[str, Any]]) -> None:
        if self._reasoning_id is not None:
            out.append({"type": "reasoning-end", "id": self._reasoning_id})
            self._reasoning_id = None


def _tool_input(call_id: str, name: str, arguments: Any) -> list[dict[str, Any]]:
    return [
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": name},
        {
            "type": "tool-input-delta",
            "toolCallId": call_id,
            "inputTextDelta": json.dumps(arguments),
        },
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": name,
            "input": arguments,
        },
    ]


def _metadata(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "sessionId": event.get("session_id"),
        "outcome": event.get("outcome"),
        "usage": event.get("usage"),
        "cost": event.get("cost"),
    }


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content)
