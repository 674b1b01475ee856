"""Streamed responses in the wire formats of the three model APIs, for a
:class:`~tether_testing.http.FakeServer` to send: OpenAI Chat Completions chunks
(OpenAI and every OpenAI-compatible server) and Responses API events, Anthropic Messages
events and Gemini ``streamGenerateContent`` chunks, as server-sent events.

With them, an application or a plugin runs end to end, through the real SDK and over
real loopback HTTP, with no key and no network::

    from tether_testing import FakeModelServer, chat_reply

    with FakeModelServer(models=["local-model"]) as server:
        server.queue(chat_reply("local-model", text="Hello!"))
        # point an OpenAI-compatible provider at it, e.g.
        # VLLM_BASE_URL=<server.url>/v1 tether run -m vllm/local-model "hi"

Tool calls are streamed in fragments, as the real APIs do, so the client's assembly of
arguments runs too. Usage figures are fixed, plausible numbers.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from .http import FakeResponse, FakeServer, RecordedRequest

__all__ = [
    "Event",
    "FakeModelServer",
    "Json",
    "anthropic_redacted_thinking",
    "anthropic_reply",
    "anthropic_text",
    "anthropic_thinking",
    "anthropic_tool_use",
    "chat_reply",
    "gemini_part",
    "gemini_reply",
    "responses_reply",
]

Json = dict[str, Any]
Event = tuple[str | None, Any]
"""One server-sent event: (event name or ``None``, data)."""


# -- OpenAI Chat Completions: builders --------------------------------------------------------
def _chat_chunk(model: str, delta: Json | None = None, finish: str | None = None) -> Json:
    return {
        "id": "chatcmpl-C3vWq1m8xYb0fZ5k2E9rLwTnHhQ7a",
        "object": "chat.completion.chunk",
        "created": 1756306542,
        "model": f"{model}-2025-04-14",
        "system_fingerprint": "fp_9c1d2f1a0b",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def chat_reply(
    model: str, text: str = "", calls: Sequence[tuple[str, str, Json]] = ()
) -> FakeResponse:
    """A streamed Chat Completions answer: ``text``, then ``calls`` (id, name, arguments)."""
    chunks = [_chat_chunk(model, {"role": "assistant", "content": "", "refusal": None})]
    if text:
        chunks.append(_chat_chunk(model, {"content": text}))
    for index, (call_id, name, arguments) in enumerate(calls):
        raw = json.dumps(arguments)
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": raw[:4]},
        }
        chunks.append(_chat_chunk(model, {"tool_calls": [head]}))
        tail = {"index": index, "function": {"arguments": raw[4:]}}
        chunks.append(_chat_chunk(model, {"tool_calls": [tail]}))
    chunks.append(_chat_chunk(model, finish="tool_calls" if calls else "stop"))
    usage = {"prompt_tokens": 480, "completion_tokens": 40, "total_tokens": 520}
    chunks.append({**_chat_chunk(model), "choices": [], "usage": usage})
    return FakeResponse.sse([*((None, c) for c in chunks), (None, "[DONE]")])


# -- OpenAI Responses: builders ---------------------------------------------------------------
def responses_reply(
    model: str, text: str = "", calls: Sequence[tuple[str, str, Json]] = ()
) -> FakeResponse:
    """A streamed Responses API answer: a message with ``text`` (unless there are only
    calls), then ``calls`` (call id, name, arguments) as function-call items."""
    seq = itertools.count()
    events: list[Event] = []
    output: list[Json] = []

    def add(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(seq), **data}))

    def response(status: str, usage: Json | None = None) -> Json:
        return {
            "id": "resp_68af2b1c9d3e8190a1b2c3d4e5f60718",
            "object": "response",
            "created_at": 1756306542,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": model,
            "output": list(output),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }

    add("response.created", response=response("in_progress"))
    if text or not calls:
        _responses_message(add, len(output), text)
        part = {"type": "output_text", "annotations": [], "text": text}
        output.append(_message_item("completed", [part]))
    for number, (call_id, name, arguments) in enumerate(calls, 1):
        output.append(_responses_call(add, len(output), f"fc_{number}", call_id, name, arguments))
    usage = {
        "input_tokens": 300,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 340,
    }
    add("response.completed", response=response("completed", usage))
    return FakeResponse.sse(events)


def _message_item(status: str, content: list[Json]) -> Json:
    return {"id": "msg_1", "type": "message", "status": status, "content": content,
            "role": "assistant"}  # fmt: skip


def _responses_message(add: Any, index: int, text: str) -> None:
    part = {"type": "output_text", "annotations": [], "text": text}
    where = {"item_id": "msg_1", "output_index": index, "content_index": 0}
    add("response.output_item.added", output_index=index, item=_message_item("in_progress", []))
    add("response.content_part.added", **where, part={**part, "text": ""})
    add("response.output_text.delta", **where, delta=text, logprobs=[])
    add("response.output_text.done", **where, text=text, logprobs=[])
    add("response.content_part.done", **where, part=part)
    add("response.output_item.done", output_index=index, item=_message_item("completed", [part]))


def _responses_call(
    add: Any, index: int, item_id: str, call_id: str, name: str, arguments: Json
) -> Json:
    raw = json.dumps(arguments)
    item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": call_id, "name": name}  # fmt: skip
    where = {"item_id": item_id, "output_index": index}
    add("response.output_item.added", output_index=index, item=item)
    for piece in (raw[:3], raw[3:]):
        add("response.function_call_arguments.delta", **where, delta=piece)
    add("response.function_call_arguments.done", **where, arguments=raw)
    done = {**item, "status": "completed", "arguments": raw}
    add("response.output_item.done", output_index=index, item=done)
    return done


# -- Anthropic Messages: builders -------------------------------------------------------------
def anthropic_reply(model: str, *blocks: Sequence[Event], stop_reason: str) -> FakeResponse:
    """One streamed Messages API response made of ``blocks`` (from the builders below)."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 410, "output_tokens": 1},
        },
    }
    events: list[Event] = [("message_start", start), ("ping", {"type": "ping"})]
    for block in blocks:
        events.extend(block)
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 96},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return FakeResponse.sse(events)


def _a_start(index: int, block: Json) -> Event:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _a_delta(index: int, delta: Json) -> Event:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _a_stop(index: int) -> Event:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def anthropic_thinking(index: int, text: str, signature: str) -> list[Event]:
    half = len(text) // 2
    return [
        _a_start(index, {"type": "thinking", "thinking": "", "signature": ""}),
        _a_delta(index, {"type": "thinking_delta", "thinking": text[:half]}),
        _a_delta(index, {"type": "thinking_delta", "thinking": text[half:]}),
        _a_delta(index, {"type": "signature_delta", "signature": signature}),
        _a_stop(index),
    ]


def anthropic_text(index: int, text: str) -> list[Event]:
    return [
        _a_start(index, {"type": "text", "text": ""}),
        _a_delta(index, {"type": "text_delta", "text": text}),
        _a_stop(index),
    ]


def anthropic_redacted_thinking(index: int, data: str) -> list[Event]:
    return [_a_start(index, {"type": "redacted_thinking", "data": data}), _a_stop(index)]


def anthropic_tool_use(index: int, call_id: str, name: str, arguments: Json) -> list[Event]:
    raw = json.dumps(arguments)
    return [
        _a_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
        _a_delta(index, {"type": "input_json_delta", "partial_json": raw[:5]}),
        _a_delta(index, {"type": "input_json_delta", "partial_json": raw[5:]}),
        _a_stop(index),
    ]


# -- Gemini: builders -------------------------------------------------------------------------
def gemini_reply(model: str, *chunks: Sequence[Json]) -> FakeResponse:
    """A streamed ``generateContent`` answer; each argument is the parts of one chunk.
    The last chunk carries ``finishReason: STOP``."""
    events: list[Event] = []
    for number, parts in enumerate(chunks, start=1):
        candidate: Json = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
        if number == len(chunks):
            candidate["finishReason"] = "STOP"
        usage = {
            "promptTokenCount": 640,
            "candidatesTokenCount": 9 * number,
            "thoughtsTokenCount": 30,
            "totalTokenCount": 670 + 9 * number,
        }
        events.append(
            (
                None,
                {
                    "candidates": [candidate],
                    "usageMetadata": usage,
                    "modelVersion": model,
                    "responseId": "rsp-7d1c",
                },
            )
        )
    return FakeResponse.sse(events)


def gemini_part(
    *,
    text: str | None = None,
    thought: bool = False,
    call: tuple[str, Json] | None = None,
    signature: str | None = None,
) -> Json:
    part: Json = {}
    if text is not None:
        part["text"] = text
    if thought:
        part["thought"] = True
    if call is not None:
        part["functionCall"] = {"name": call[0], "args": call[1]}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


class FakeModelServer(FakeServer):
    """A :class:`FakeServer` that also answers an OpenAI-style model listing
    (``GET .../models``) with ``models``, as a client checking its model first expects;
    every other request gets the next queued response (e.g. a :func:`chat_reply`)."""

    def __init__(self, models: Sequence[str] = ("fake-model",)) -> None:
        super().__init__()
        self.models = list(models)

    def _respond(self, request: RecordedRequest) -> FakeResponse:
        path = request.path.split("?", 1)[0].rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            listing = [
                {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
                for name in self.models
            ]
            return FakeResponse.json({"object": "list", "data": listing})
        return super()._respond(request)
