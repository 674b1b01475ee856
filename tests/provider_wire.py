"""Wire formats and request rules of the three provider APIs, for cross-provider tests.

Two halves:

- **Builders** of streamed responses: the public ones (Anthropic Messages, OpenAI Chat
  Completions, Gemini) come from :mod:`tether_testing.wire`; the OpenAI Responses stream
  here records every signature it issues in a :class:`Ledger` with the
  ``provider/model`` that issued it.
- **Validators** that read a recorded request body and return every way it breaks the
  receiving API's documented rules (an empty list means valid). They use the ledger to
  tell a model's own reasoning from another model's: a native reasoning block must carry
  a signature that the receiving model itself issued, and no issued signature may reach
  any other model, in any field.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tether_testing.http import FakeResponse
from tether_testing.wire import (
    Event as Event,
)
from tether_testing.wire import (
    Json as Json,
)
from tether_testing.wire import (
    anthropic_redacted_thinking as anthropic_redacted_thinking,
)
from tether_testing.wire import (
    anthropic_reply as anthropic_reply,
)
from tether_testing.wire import (
    anthropic_text as anthropic_text,
)
from tether_testing.wire import (
    anthropic_thinking as anthropic_thinking,
)
from tether_testing.wire import (
    anthropic_tool_use as anthropic_tool_use,
)
from tether_testing.wire import (
    chat_reply as chat_reply,
)
from tether_testing.wire import (
    gemini_part as gemini_part,
)
from tether_testing.wire import (
    gemini_reply as gemini_reply,
)

GEMINI_SKIP_SIGNATURE = base64.urlsafe_b64decode("skip_thought_signature_validator")
"""Google's documented stand-in signature for function calls no Gemini model signed."""


# -- shared helpers ------------------------------------------------------------------------
def tiny_png(rgb: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    """A valid 1x1 PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" + bytes(rgb))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def b64decode_any(value: str) -> bytes:
    """Strict base64 decoding in either alphabet (padding optional)."""
    padded = value + "=" * (-len(value) % 4)
    if "-" in value or "_" in value:
        return base64.urlsafe_b64decode(padded)
    return base64.b64decode(padded, validate=True)


def image_problem(mime_type: Any, data: Any, where: str) -> str | None:
    """Why inline image ``data`` (base64) of ``mime_type`` would be rejected, or None."""
    if mime_type not in _MAGIC:
        return f"{where}: unsupported image media type {mime_type!r}"
    if not isinstance(data, str) or not data:
        return f"{where}: image data must be a non-empty base64 string"
    try:
        raw = b64decode_any(data)
    except (binascii.Error, ValueError):
        return f"{where}: image data is not valid base64"
    if not raw.startswith(_MAGIC[mime_type]):
        return f"{where}: image bytes do not match the media type {mime_type}"
    return None


def data_url_problem(url: Any, where: str) -> str | None:
    if not isinstance(url, str):
        return f"{where}: image URL must be a string"
    if url.startswith(("https://", "http://")):
        return None
    match = re.fullmatch(r"data:([\w/+.-]+);base64,(.+)", url, re.S)
    if match is None:
        return f"{where}: image URL is neither http(s) nor a base64 data URL"
    return image_problem(match.group(1), match.group(2), where)


def strings(value: Any, path: str = "$") -> Iterator[tuple[str, str]]:
    """Every string leaf of a JSON value with its path (``$.messages[2].content``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, f"{path}[{index}]")


def contains_text(body: Any, text: str) -> bool:
    """Whether ``text`` occurs inside some string of the request body."""
    return any(text in leaf for _, leaf in strings(body))


def contains_image(body: Any, raw: bytes) -> bool:
    """Whether the image ``raw`` travels in the body (as base64, bare or in a data URL)."""
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    return any(form in leaf for _, leaf in strings(body) for form in forms)


def _json_object(text: Any) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (TypeError, ValueError):
        return False


# -- the ledger -------------------------------------------------------------------------------
@dataclass
class Ledger:
    """Which ``provider/model`` issued each reasoning signature, and the reasoning text
    that came with it, so a request can be checked for reasoning it may not replay."""

    owners: dict[str, str] = field(default_factory=dict)
    """Every textual form of every issued signature → its issuer."""
    thinking: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Canonical signature → (issuer, reasoning text issued with it)."""
    gemini: dict[bytes, str] = field(default_factory=dict)
    """Raw Gemini thought signature → issuer."""
    gemini_thoughts: dict[str, str] = field(default_factory=dict)
    """Gemini thought text → issuer."""
    responses_follows: dict[str, str] = field(default_factory=dict)
    """OpenAI reasoning item id → id of the item that followed it in its response."""
    responses_requires: dict[str, str] = field(default_factory=dict)
    """OpenAI output item id → id of the reasoning item of its response."""
    responses_items: dict[str, str] = field(default_factory=dict)
    """OpenAI output item id → issuer."""

    def issue(self, owner: str, signature: str, text: str = "") -> str:
        self.owners[signature] = owner
        self.thinking[signature] = (owner, text)
        return signature

    def issue_gemini(self, owner: str, raw: bytes, thought: str | None = None) -> str:
        """Record a Gemini signature (and its thought text); returns it as the API sends
        it in responses (standard base64)."""
        self.gemini[raw] = owner
        for form in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
            self.owners[form] = owner
            self.owners[form.rstrip("=")] = owner
        if thought is not None:
            self.gemini_thoughts[thought] = owner
        return base64.b64encode(raw).decode()

    def owner_of(self, signature: Any) -> str | None:
        return self.owners.get(signature) if isinstance(signature, str) else None

    def reasoning_texts(self, *, not_by: str) -> list[str]:
        """Reasoning text issued by anyone but ``not_by``."""
        texts = [text for owner, text in self.thinking.values() if owner != not_by and text]
        texts += [text for text, owner in self.gemini_thoughts.items() if owner != not_by]
        return texts


_NATIVE_SIGNATURE_KEYS = frozenset(
    {"signature", "data", "encrypted_content", "thoughtSignature", "thought_signature"}
)


def signature_leaks(body: Any, ledger: Ledger, receiver: str) -> list[str]:
    """Issued signatures found where they must not be: any signature of another model,
    anywhere in the body, or the receiver's own signature outside a signature field."""
    problems: list[str] = []
    for path, leaf in strings(body):
        for form, owner in ledger.owners.items():
            if len(form) < 16 or form not in leaf:
                continue
            key = path.rsplit(".", 1)[-1]
            if owner != receiver:
                problems.append(f"{path}: carries a signature issued by {owner}")
            elif key not in _NATIVE_SIGNATURE_KEYS:
                problems.append(f"{path}: carries a signature outside a signature field")
    return sorted(set(problems))


# -- Anthropic Messages: rules ----------------------------------------------------------------
_ANTHROPIC_BLOCKS = {
    "user": {"text", "image", "tool_result", "document"},
    "assistant": {"text", "thinking", "redacted_thinking", "tool_use"},
}
_ANTHROPIC_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def anthropic_violations(body: Json, ledger: Ledger) -> list[str]:
    """How a Messages API request body breaks the API's rules (empty: valid)."""
    model = body.get("model")
    origin = f"anthropic/{model}"
    problems: list[str] = []
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        problems.append("messages must start with a user message")
    seen_ids: set[str] = set()
    uses_tools = False
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role")
        if role not in _ANTHROPIC_BLOCKS:
            problems.append(f"{where}: role {role!r} is not user or assistant")
            continue
        if i and messages[i - 1].get("role") == role:
            problems.append(f"{where}: two {role} messages in a row; roles must alternate")
        content = message.get("content")
        if isinstance(content, str):
            if not content.strip():
                problems.append(f"{where}: empty text content")
            continue
        if not content:
            problems.append(f"{where}: empty content")
            continue
        for j, block in enumerate(content):
            at = f"{where}.content[{j}]"
            kind = block.get("type")
            if kind not in _ANTHROPIC_BLOCKS[role]:
                problems.append(f"{at}: a {kind!r} block cannot appear in a {role} message")
            elif kind == "text" and not str(block.get("text", "")).strip():
                problems.append(f"{at}: text blocks must contain non-whitespace text")
            elif kind == "image":
                problems.extend(_anthropic_image(block, at))
            elif kind == "thinking":
                problems.extend(_anthropic_thinking(block, ledger, origin, at))
            elif kind == "redacted_thinking" and ledger.owner_of(block.get("data")) != origin:
                problems.append(f"{at}: redacted thinking not issued by {origin}")
            elif kind == "tool_use":
                uses_tools = True
                call_id = block.get("id", "")
                if not _ANTHROPIC_TOOL_ID.match(call_id) or call_id in seen_ids:
                    problems.append(f"{at}: tool_use id {call_id!r} is malformed or repeated")
                seen_ids.add(call_id)
                if not isinstance(block.get("input"), dict):
                    problems.append(f"{at}: tool_use input must be an object")
            elif kind == "tool_result":
                uses_tools = True
                problems.extend(_anthropic_tool_result(block, at))
        problems.extend(_anthropic_pairing(messages, i))
    if uses_tools and not body.get("tools"):
        problems.append("tool_use/tool_result blocks require the request to define tools")
    breakpoints = sum(path.endswith(".cache_control.type") for path, _ in strings(body))
    if breakpoints > 4:
        problems.append(f"{breakpoints} cache_control breakpoints; at most 4 are allowed")
    problems.extend(_anthropic_thinking_config(body))
    return problems


def _anthropic_image(block: Json, at: str) -> list[str]:
    source = block.get("source") or {}
    if source.get("type") == "url":
        return [] if str(source.get("url", "")).startswith("https://") else [f"{at}: bad url"]
    if source.get("type") != "base64":
        return [f"{at}: image source must be base64 or url"]
    problem = image_problem(source.get("media_type"), source.get("data"), at)
    return [problem] if problem else []


def _anthropic_thinking(block: Json, ledger: Ledger, origin: str, at: str) -> list[str]:
    signature = block.get("signature")
    issued = ledger.thinking.get(signature) if isinstance(signature, str) else None
    if issued is None:
        return [f"{at}: thinking block without a signature Anthropic issued"]
    owner, text = issued
    if owner != origin:
        return [f"{at}: thinking block signed by {owner} sent to {origin}"]
    if block.get("thinking") != text:
        return [f"{at}: thinking text was modified; it must be replayed unchanged"]
    return []


def _anthropic_tool_result(block: Json, at: str) -> list[str]:
    content = block.get("content", "")
    if isinstance(content, str):
        return []
    problems: list[str] = []
    for k, part in enumerate(content):
        if part.get("type") == "image":
            problems.extend(_anthropic_image(part, f"{at}.content[{k}]"))
        elif part.get("type") != "text" or not str(part.get("text", "")).strip():
            problems.append(f"{at}.content[{k}]: tool results hold non-empty text or images")
    return problems


def _anthropic_pairing(messages: Sequence[Json], i: int) -> list[str]:
    """Each assistant tool_use is answered by a tool_result in the very next (user)
    message, whose content opens with the results; results answer only those calls."""
    message = messages[i]
    content = message.get("content")
    if not isinstance(content, list):
        return []
    where = f"messages[{i}]"
    if message.get("role") == "assistant":
        calls = [b.get("id") for b in content if b.get("type") == "tool_use"]
        if not calls:
            return []
        following = messages[i + 1] if i + 1 < len(messages) else None
        answer = following.get("content") if following else None
        if following is None or following.get("role") != "user" or not isinstance(answer, list):
            return [f"{where}: tool_use blocks not answered by the next user message"]
        answered = [b.get("tool_use_id") for b in answer if b.get("type") == "tool_result"]
        problems = []
        if sorted(answered) != sorted(calls):
            problems.append(f"{where}: calls {calls} answered by {answered}")
        if [b.get("type") for b in answer[: len(answered)]] != ["tool_result"] * len(answered):
            problems.append(f"messages[{i + 1}]: tool_result blocks must come first")
        return problems
    results = [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
    if not results:
        return []
    previous = messages[i - 1] if i else {}
    previous_content = previous.get("content") if isinstance(previous, dict) else None
    calls = [
        b.get("id")
        for b in (previous_content if isinstance(previous_content, list) else [])
        if b.get("type") == "tool_use"
    ]
    stray = [r for r in results if r not in calls]
    return [f"{where}: tool_result for {stray} without a tool_use just before"] if stray else []


def _anthropic_thinking_config(body: Json) -> list[str]:
    thinking = body.get("thinking")
    if not thinking or thinking.get("type") == "disabled":
        return []
    problems = []
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024 or budget >= body.get("max_tokens", 0):
            problems.append("thinking.budget_tokens must be >= 1024 and below max_tokens")
    if "temperature" in body or "top_k" in body:
        problems.append("temperature/top_k cannot be set while thinking is on")
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
        opening = messages[-2]["content"][0] if len(messages) > 1 else {}
        if opening.get("type") not in ("thinking", "redacted_thinking"):
            problems.append(
                "with thinking on, the assistant turn being continued must open with a thinking block"
            )
    return problems


# -- OpenAI Responses: builders ---------------------------------------------------------------
class ResponsesStream:
    """One streamed Responses API answer, its events numbered as the API numbers them.
    Reasoning items are recorded in the ledger with the item that follows them."""

    def __init__(self, model: str, ledger: Ledger) -> None:
        self.model = model
        self.origin = f"openai/{model}"
        self.ledger = ledger
        self.events: list[Event] = []
        self.output: list[Json] = []
        self._seq = itertools.count()
        self._reasoning: str | None = None
        self._add("response.created", response=self._response("in_progress"))

    def _response(self, status: str, **extra: Any) -> Json:
        return {
            "id": "resp_68af1c6e0b4c8193a4bd03d2c54f70b0",
            "object": "response",
            "created_at": 1756306542,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": f"{self.model}-2026-03-17",
            "output": list(self.output) if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "store": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
            **extra,
        }

    def _add(self, kind: str, **data: Any) -> None:
        self.events.append((kind, {"type": kind, "sequence_number": next(self._seq), **data}))

    def _item(self, item: Json, added: Json) -> None:
        index = len(self.output)
        item_id = item["id"]
        self.ledger.responses_items[item_id] = self.origin
        if self._reasoning is not None and item["type"] != "reasoning":
            self.ledger.responses_follows.setdefault(self._reasoning, item_id)
            self.ledger.responses_requires[item_id] = self._reasoning
        self._add("response.output_item.added", output_index=index, item=added)
        self._deltas(index, item)
        self.output.append(item)
        self._add("response.output_item.done", output_index=index, item=item)

    def _deltas(self, index: int, item: Json) -> None:
        item_id = item["id"]
        if item["type"] == "reasoning":
            for number, part in enumerate(item["summary"]):
                common = {"item_id": item_id, "output_index": index, "summary_index": number}
                self._add(
                    "response.reasoning_summary_part.added",
                    **common,
                    part={"type": "summary_text", "text": ""},
                )
                self._add("response.reasoning_summary_text.delta", **common, delta=part["text"])
                self._add("response.reasoning_summary_part.done", **common, part=part)
        elif item["type"] == "message":
            text = item["content"][0]["text"]
            common = {"item_id": item_id, "output_index": index, "content_index": 0}
            self._add("response.output_text.delta", **common, delta=text, logprobs=[])
            self._add("response.output_text.done", **common, text=text, logprobs=[])
        else:
            arguments = item["arguments"]
            self._add(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=arguments,
            )
            self._add(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                arguments=arguments,
            )

    def reasoning(self, item_id: str, summary: str, encrypted: str) -> ResponsesStream:
        self.ledger.issue(self.origin, encrypted, summary)
        self._reasoning = item_id
        item = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": encrypted,
        }
        self._item(item, {"id": item_id, "type": "reasoning", "summary": []})
        return self

    def message(self, item_id: str, text: str) -> ResponsesStream:
        part = {"type": "output_text", "annotations": [], "text": text}
        item = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        self._item(item, {**item, "status": "in_progress", "content": []})
        return self

    def call(self, item_id: str, call_id: str, name: str, arguments: Json) -> ResponsesStream:
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "completed",
            "arguments": json.dumps(arguments),
            "call_id": call_id,
            "name": name,
        }
        self._item(item, {**item, "status": "in_progress", "arguments": ""})
        return self

    def completed(self) -> FakeResponse:
        usage = {
            "input_tokens": 520,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 80,
            "output_tokens_details": {"reasoning_tokens": 48},
            "total_tokens": 600,
        }
        self._add("response.completed", response=self._response("completed", usage=usage))
        return FakeResponse.sse(self.events)


# -- OpenAI Responses: rules ------------------------------------------------------------------
_RESPONSES_ROLES = {"user", "assistant", "system", "developer"}
_RESPONSES_INPUT_PARTS = {"input_text", "input_image", "input_file"}


def responses_violations(body: Json, ledger: Ledger) -> list[str]:
    """How a Responses API request body breaks the API's rules (empty: valid)."""
    origin = f"openai/{body.get('model')}"
    problems: list[str] = []
    items = body.get("input") or []
    calls: dict[str, str] = {}
    answered: set[str] = set()
    replayed: set[str] = set()
    for i, item in enumerate(items):
        at = f"input[{i}]"
        kind = item.get("type", "message")
        item_id = item.get("id")
        if item_id is not None:
            replayed.add(item_id)
            if ledger.responses_items.get(item_id) != origin:
                problems.append(f"{at}: item id {item_id!r} was not issued by {origin}")
            needed = ledger.responses_requires.get(item_id)
            if needed is not None and needed not in replayed:
                problems.append(f"{at}: item {item_id} sent without its reasoning item {needed}")
        if kind == "reasoning":
            problems.extend(_responses_reasoning(items, i, ledger, origin))
        elif kind == "message":
            problems.extend(_responses_message(item, at))
        elif kind == "function_call":
            call_id = item.get("call_id")
            if not call_id or call_id in calls:
                problems.append(f"{at}: function_call call_id {call_id!r} missing or repeated")
            calls[call_id] = item.get("name", "")
            if not _json_object(item.get("arguments")):
                problems.append(f"{at}: arguments must be a JSON object in a string")
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                problems.append(
                    f"{at}: output for {call_id!r}, which no earlier function_call made"
                )
            if call_id in answered:
                problems.append(f"{at}: {call_id!r} answered twice")
            answered.add(call_id)
            problems.extend(_responses_output(item.get("output"), at))
        else:
            problems.append(f"{at}: unknown item type {kind!r}")
    for call_id in calls.keys() - answered:
        problems.append(f"no function_call_output for call {call_id!r}")
    stateless = body.get("store") is False and "reasoning.encrypted_content" in (
        body.get("include") or []
    )
    if any(item.get("type") == "reasoning" for item in items) and not stateless:
        problems.append("stateless reasoning replay needs store=false and encrypted_content")
    return problems


def _responses_reasoning(items: Sequence[Json], i: int, ledger: Ledger, origin: str) -> list[str]:
    at = f"input[{i}]"
    item = items[i]
    encrypted = item.get("encrypted_content")
    issued = ledger.thinking.get(encrypted) if isinstance(encrypted, str) else None
    if issued is None or issued[0] != origin:
        owner = issued[0] if issued else "nobody"
        return [f"{at}: reasoning item with encrypted_content from {owner}, sent to {origin}"]
    if not isinstance(item.get("summary"), list):
        return [f"{at}: a reasoning item needs its summary list"]
    follower = items[i + 1].get("id") if i + 1 < len(items) else None
    expected = ledger.responses_follows.get(item.get("id", ""))
    if expected is None or follower != expected:
        return [f"{at}: reasoning item not followed by its item {expected!r} (got {follower!r})"]
    return []


def _responses_message(item: Json, at: str) -> list[str]:
    role = item.get("role")
    if role not in _RESPONSES_ROLES:
        return [f"{at}: message role {role!r} is not valid"]
    content = item.get("content")
    if isinstance(content, str):
        return [] if content else [f"{at}: empty message"]
    allowed = {"output_text", "refusal"} if role == "assistant" else _RESPONSES_INPUT_PARTS
    problems = []
    for k, part in enumerate(content or []):
        if part.get("type") not in allowed:
            problems.append(f"{at}.content[{k}]: {part.get('type')!r} not allowed for {role}")
        elif part.get("type") == "input_image":
            problem = data_url_problem(part.get("image_url"), f"{at}.content[{k}]")
            problems.extend([problem] if problem else [])
    return problems


def _responses_output(output: Any, at: str) -> list[str]:
    if isinstance(output, str):
        return []
    if not isinstance(output, list):
        return [f"{at}: output must be a string or a list of content parts"]
    problems = []
    for k, part in enumerate(output):
        if part.get("type") not in _RESPONSES_INPUT_PARTS:
            problems.append(f"{at}.output[{k}]: {part.get('type')!r} not allowed in an output")
        elif part.get("type") == "input_image":
            problem = data_url_problem(part.get("image_url"), f"{at}.output[{k}]")
            problems.extend([problem] if problem else [])
    return problems


# -- OpenAI Chat Completions: rules -----------------------------------------------------------
_CHAT_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio"},
    "tool": {"role", "content", "tool_call_id"},
}


def chat_violations(body: Json) -> list[str]:
    """How a Chat Completions request body breaks the API's rules (empty: valid)."""
    problems: list[str] = []
    open_calls: list[str] = []
    last_calls: set[str] = set()
    for i, message in enumerate(body.get("messages") or []):
        at = f"messages[{i}]"
        role = message.get("role")
        if role not in _CHAT_KEYS:
            problems.append(f"{at}: role {role!r} is not valid")
            continue
        extra = set(message) - _CHAT_KEYS[role]
        if extra:
            problems.append(f"{at}: fields {sorted(extra)} are not accepted in a {role} message")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in last_calls:
                problems.append(
                    f"{at}: tool message for {call_id!r}, not a call of the assistant message before"
                )
            elif call_id not in open_calls:
                problems.append(f"{at}: {call_id!r} answered twice")
            else:
                open_calls.remove(call_id)
            problems.extend(_chat_tool_content(message.get("content"), at))
            continue
        if open_calls:
            problems.append(
                f"{at}: tool calls {open_calls} not answered before this {role} message"
            )
            open_calls = []
        last_calls = set()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") in (None, "") and not calls:
                problems.append(f"{at}: assistant message with neither content nor tool calls")
            for k, call in enumerate(calls):
                call_id = call.get("id", "")
                if not call_id or len(call_id) > 40 or call_id in last_calls:
                    problems.append(
                        f"{at}.tool_calls[{k}]: id {call_id!r} missing, over 40 characters or repeated"
                    )
                function = call.get("function") or {}
                if call.get("type") != "function" or not function.get("name"):
                    problems.append(f"{at}.tool_calls[{k}]: must be a named function call")
                if not _json_object(function.get("arguments")):
                    problems.append(
                        f"{at}.tool_calls[{k}]: arguments must be a JSON object in a string"
                    )
                last_calls.add(call_id)
            open_calls = [c.get("id", "") for c in calls]
        elif role == "user":
            problems.extend(_chat_user_content(message.get("content"), at))
    if open_calls:
        problems.append(f"tool calls {open_calls} are never answered")
    return problems


def _chat_tool_content(content: Any, at: str) -> list[str]:
    if isinstance(content, str):
        return []
    if isinstance(content, list) and all(p.get("type") == "text" for p in content):
        return []
    return [f"{at}: tool message content must be text only"]


def _chat_user_content(content: Any, at: str) -> list[str]:
    if isinstance(content, str):
        return [] if content else [f"{at}: empty user message"]
    problems = []
    for k, part in enumerate(content or []):
        if part.get("type") == "image_url":
            problem = data_url_problem(
                (part.get("image_url") or {}).get("url"), f"{at}.content[{k}]"
            )
            problems.extend([problem] if problem else [])
        elif part.get("type") != "text":
            problems.append(f"{at}.content[{k}]: part type {part.get('type')!r} is not valid")
    return problems


# -- Gemini: rules ----------------------------------------------------------------------------
_GEMINI_DATA = {
    "text": "text",
    "inlineData": "inlineData",
    "inline_data": "inlineData",
    "fileData": "fileData",
    "file_data": "fileData",
    "functionCall": "functionCall",
    "function_call": "functionCall",
    "functionResponse": "functionResponse",
    "function_response": "functionResponse",
}


def _g(mapping: Json, camel: str) -> Any:
    """A field by its camelCase name or its snake_case twin (the API accepts both)."""
    if camel in mapping:
        return mapping[camel]
    return mapping.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel))


def gemini_violations(
    body: Json, ledger: Ledger, *, model: str, multimodal_responses: bool, strict_signatures: bool
) -> list[str]:
    """How a ``generateContent`` request body breaks the Gemini API's rules (empty: valid).

    ``multimodal_responses``: the model accepts images inside ``functionResponse.parts``.
    ``strict_signatures``: the model (Gemini 3) rejects a function-calling step of the
    current turn whose first function call carries no thought signature.
    """
    origin = f"google/{model}"
    problems: list[str] = []
    contents = body.get("contents") or []
    if not contents or contents[0].get("role") != "user":
        problems.append("contents must start with a user turn")
    for i, content in enumerate(contents):
        where = f"contents[{i}]"
        role = content.get("role")
        if role not in ("user", "model"):
            problems.append(f"{where}: role {role!r} is not user or model")
            continue
        if not content.get("parts"):
            problems.append(f"{where}: a content needs at least one part")
        for j, part in enumerate(content.get("parts") or []):
            problems.extend(
                _gemini_part(
                    part, role, ledger, origin, multimodal_responses, f"{where}.parts[{j}]"
                )
            )
        problems.extend(_gemini_pairing(contents, i))
    if strict_signatures:
        problems.extend(_gemini_current_turn_signatures(contents))
    thinking = _g(body.get("generationConfig") or {}, "thinkingConfig") or {}
    if _g(thinking, "thinkingBudget") is not None and _g(thinking, "thinkingLevel") is not None:
        problems.append("thinkingConfig: thinkingBudget and thinkingLevel cannot both be set")
    return problems


def _gemini_part(
    part: Json, role: str, ledger: Ledger, origin: str, multimodal: bool, at: str
) -> list[str]:
    problems: list[str] = []
    data = {_GEMINI_DATA[k] for k in part if k in _GEMINI_DATA}
    signature = _g(part, "thoughtSignature")
    if len(data) > 1 or (not data and signature is None):
        problems.append(f"{at}: a part holds exactly one kind of data, found {sorted(data)}")
    if signature is not None:
        try:
            raw = b64decode_any(signature)
        except (binascii.Error, ValueError):
            return [*problems, f"{at}: thoughtSignature is not base64"]
        owner = ledger.gemini.get(raw)
        if role != "model":
            problems.append(f"{at}: thought signatures belong on model parts")
        elif raw == GEMINI_SKIP_SIGNATURE:
            if "functionCall" not in data:
                problems.append(f"{at}: the placeholder signature is only for function calls")
        elif owner != origin:
            problems.append(
                f"{at}: thoughtSignature issued by {owner or 'nobody'}, sent to {origin}"
            )
    if part.get("thought") and (
        role != "model" or ledger.gemini_thoughts.get(part.get("text", "")) != origin
    ):
        problems.append(f"{at}: a thought part that {origin} did not produce")
    if "functionCall" in data:
        call = _g(part, "functionCall")
        if role != "model" or not call.get("name") or not isinstance(call.get("args", {}), dict):
            problems.append(
                f"{at}: function calls are named, take an object, and come from the model"
            )
    if "functionResponse" in data:
        response = _g(part, "functionResponse")
        if role != "user" or not isinstance(response.get("response"), dict):
            problems.append(f"{at}: function responses carry an object and come from the user")
        media = response.get("parts") or []
        if media and not multimodal:
            problems.append(f"{at}: this model takes no images inside function responses")
        for k, item in enumerate(media):
            blob = _g(item, "inlineData") or {}
            problem = image_problem(_g(blob, "mimeType"), blob.get("data"), f"{at}.parts[{k}]")
            problems.extend([problem] if problem else [])
    if "inlineData" in data:
        blob = _g(part, "inlineData")
        problem = image_problem(_g(blob, "mimeType"), blob.get("data"), at)
        problems.extend([problem] if problem else [])
    return problems


def _calls(content: Json) -> list[Json]:
    return [_g(p, "functionCall") for p in content.get("parts") or [] if _g(p, "functionCall")]


def _responses(content: Json) -> list[Json]:
    return [
        _g(p, "functionResponse") for p in content.get("parts") or [] if _g(p, "functionResponse")
    ]


def _gemini_pairing(contents: Sequence[Json], i: int) -> list[str]:
    """A model turn's function calls are answered, in order and by name, by the very next
    content: a user turn holding one function response per call."""
    content = contents[i]
    where = f"contents[{i}]"
    if content.get("role") == "model":
        calls = _calls(content)
        if not calls:
            return []
        following = contents[i + 1] if i + 1 < len(contents) else {}
        responses = _responses(following)
        if following.get("role") != "user" or len(responses) != len(calls):
            return [f"{where}: the next user turn must hold one function response per call"]
        if [r.get("name") for r in responses] != [c.get("name") for c in calls]:
            return [
                f"{where}: responses {[r.get('name') for r in responses]} do not answer calls {[c.get('name') for c in calls]} in order"
            ]
        ids = [(c.get("id"), r.get("id")) for c, r in zip(calls, responses, strict=True)]
        if any(call_id and call_id != response_id for call_id, response_id in ids):
            return [f"{where}: function response ids do not match the call ids"]
        return []
    if _responses(content) and (i == 0 or not _calls(contents[i - 1])):
        return [f"{where}: function responses without function calls just before"]
    return []


def _gemini_current_turn_signatures(contents: Sequence[Json]) -> list[str]:
    start = 0
    for i, content in enumerate(contents):
        if content.get("role") == "user" and not _responses(content):
            start = i
    problems = []
    for i in range(start, len(contents)):
        parts = [p for p in contents[i].get("parts") or [] if _g(p, "functionCall")]
        if (
            contents[i].get("role") == "model"
            and parts
            and _g(parts[0], "thoughtSignature") is None
        ):
            problems.append(
                f"contents[{i}]: first function call of the current turn has no thought signature"
            )
    return problems
