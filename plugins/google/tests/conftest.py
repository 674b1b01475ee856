"""Fixtures for tether-google: the Gemini streaming wire format, served by FakeServer.

The chunks below follow the Gemini API's ``streamGenerateContent?alt=sse`` responses:
one ``GenerateContentResponse`` JSON object per SSE ``data:`` line, usage metadata on
every chunk (running totals), ``finishReason`` on the last candidate chunk, and errors as
``{"error": {"code", "message", "status", "details"}}`` bodies (or, mid-stream, as a
``data:`` line carrying the same object).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tether.config import Config, ProviderConfig
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest

MODEL = "gemini-2.5-flash"
KEY = "AIzaTEST-not-a-real-key-0123456789"


def sig(label: str) -> str:
    """A realistic thought signature: standard base64 with ``+`` and ``/`` in it."""
    raw = b"\xfb\xef\xbe" + label.encode() + b"\xff\xfe\xfd" + bytes(range(40))
    return base64.b64encode(raw).decode()


def same_bytes(sent: str, original: str) -> bool:
    """Whether two base64 strings hold the same bytes (either alphabet)."""

    def decode(value: str) -> bytes:
        if "-" in value or "_" in value:
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return base64.b64decode(value)

    return decode(sent) == decode(original)


def field(mapping: dict[str, Any], camel: str) -> Any:
    """A request field by its camelCase name or its snake_case twin (the SDK sends some
    nested fields in proto-name form; the API accepts both)."""
    if camel in mapping:
        return mapping[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return mapping[snake]


def usage(prompt: int = 12, output: int = 5, cached: int = 0, thoughts: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if cached:
        data["cachedContentTokenCount"] = cached
        data["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]
    if thoughts:
        data["thoughtsTokenCount"] = thoughts
    return data


def chunk(
    *parts: dict[str, Any],
    finish: str | None = None,
    usage_metadata: dict[str, Any] | None = None,
    finish_message: str | None = None,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    if finish_message is not None:
        candidate["finishMessage"] = finish_message
    return {
        "candidates": [candidate],
        "usageMetadata": usage_metadata or usage(),
        "modelVersion": MODEL,
        "responseId": "resp-1",
    }


def text(value: str, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": value}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def thought(value: str, signature: str | None = None) -> dict[str, Any]:
    return {**text(value, signature), "thought": True}


def function_call(name: str, args: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def stream(
    *chunks: dict[str, Any], split_at: tuple[int, ...] = (), drop_after: int | None = None
) -> FakeResponse:
    return FakeResponse.sse([(None, c) for c in chunks], split_at=split_at, drop_after=drop_after)


def reply(words: str, *, finish: str = "STOP") -> FakeResponse:
    """A streamed text answer, one chunk per word, ending with ``finish``."""
    pieces = words.split(" ")
    chunks = [chunk(text(p if i == 0 else " " + p)) for i, p in enumerate(pieces)]
    chunks[-1] = chunk(*chunks[-1]["candidates"][0]["content"]["parts"], finish=finish)
    return stream(*chunks)


def error(
    code: int,
    status: str,
    message: str,
    *details: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> FakeResponse:
    body: dict[str, Any] = {"error": {"code": code, "message": message, "status": status}}
    if details:
        body["error"]["details"] = list(details)
    return FakeResponse.json(body, status=code, headers=headers)


def contents_of(request: RecordedRequest) -> list[dict[str, Any]]:
    return request.json()["contents"]  # type: ignore[no-any-return]


class Wire:
    """The helpers above, handed to tests as one fixture."""

    sig = staticmethod(sig)
    same_bytes = staticmethod(same_bytes)
    field = staticmethod(field)
    usage = staticmethod(usage)
    chunk = staticmethod(chunk)
    text = staticmethod(text)
    thought = staticmethod(thought)
    function_call = staticmethod(function_call)
    stream = staticmethod(stream)
    reply = staticmethod(reply)
    error = staticmethod(error)
    contents_of = staticmethod(contents_of)
    model = MODEL
    key = KEY


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture(autouse=True)
def _isolated_environment(offline: Callable[..., None]) -> None:
    """No real key or gateway from the developer's shell leaks into a test, and only this
    plugin loads from entry points."""
    offline(plugins=("google",))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def provider_config(server: FakeServer) -> ProviderConfig:
    return ProviderConfig(api_key=KEY, base_url=server.url, timeout=30)


@pytest.fixture
def config(provider_config: ProviderConfig) -> Config:
    return Config(providers={"google": provider_config})
