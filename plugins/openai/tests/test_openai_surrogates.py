"""A server that cuts its stream between the two halves of a surrogate pair (JSON
``\\ud83d`` in one chunk, ``\\ude00`` in the next): the answer arrives whole, through the
real SDK's parser."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import tether
from tether.events import TextDelta
from tether_testing.http import FakeResponse, FakeServer

from .test_openai_chat import chunk, usage_chunk


def escaped_reply(*parts: str) -> FakeResponse:
    """Chunks written with ``\\uXXXX`` escapes, as servers that split by UTF-16 unit do."""
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": p}) for p in parts),
        chunk(finish="stop"),
        usage_chunk(),
    ]
    return FakeResponse.sse([(None, json.dumps(c)) for c in chunks] + [(None, "[DONE]")])


async def test_an_emoji_split_across_chunks_reaches_the_answer_and_the_session(
    fake_server: FakeServer, openai_agent: Callable[..., tether.Agent], tmp_path: Path
) -> None:
    fake_server.queue(escaped_reply("Done \ud83d", "\ude00 and \ud840", "\udc0b!"))
    session = tether.JsonlSession(tmp_path / "s.jsonl")
    streamed = []
    result = None
    async for event in openai_agent().stream("hi", session=session):
        if isinstance(event, TextDelta):
            streamed.append(event.text)
        if isinstance(event, tether.Done):
            result = event.result
    assert result is not None and result.outcome.value == "completed", result
    assert result.output == "Done 😀 and 𠀋!"
    assert "".join(streamed) == "Done 😀 and 𠀋!"
    assert "Done 😀 and 𠀋!" in (tmp_path / "s.jsonl").read_text(encoding="utf-8")
