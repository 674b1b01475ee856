"""Surrogate halves split across stream deltas are joined: the streamed deltas, the
answer and the stored session hold the real characters, whatever the split points."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import tether
from tether.events import TextDelta, ThinkingDelta
from tether.messages import ThinkingBlock
from tether.surrogates import REPLACEMENT, SurrogateJoiner, join_surrogates
from tether.testing import Reply, ScriptedProvider

# Text rich in characters outside the Basic Multilingual Plane (emoji, rare CJK, ...).
non_bmp = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF, exclude_categories=["Cs"])
texts = st.lists(st.one_of(non_bmp, st.characters(exclude_categories=["Cs"])), min_size=1).map(
    "".join
)


def utf16_units(text: str) -> str:
    """``text`` as an SDK decoding JSON chunk by chunk sees it: one character per UTF-16
    code unit, so each non-BMP character is a (high, low) surrogate pair."""
    raw = text.encode("utf-16-le")
    return "".join(chr(int.from_bytes(raw[i : i + 2], "little")) for i in range(0, len(raw), 2))


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@given(texts, st.lists(st.integers(min_value=0), max_size=12))
def test_the_joiner_restores_the_text_for_any_split(text: str, cuts: list[int]) -> None:
    joiner = SurrogateJoiner()
    out = []
    for chunk in split(utf16_units(text), cuts):
        joined = joiner.join(TextDelta(chunk))
        if joined is not None:
            out.append(joined.text)
            joined.text.encode("utf-8")  # every delta passed on is valid Unicode
    assert joiner.flush() == []
    assert "".join(out) == text


@given(texts, st.lists(st.integers(min_value=0), max_size=8))
@settings(deadline=None)
async def test_a_streamed_answer_split_inside_surrogate_pairs_is_kept(
    text: str, cuts: list[int]
) -> None:
    units = utf16_units(text)
    chunks = split(units, cuts)
    model = ScriptedProvider([Reply(chunks=chunks, thinking=units)])
    agent = tether.Agent(model)
    streamed = []
    result = None
    async for event in agent.stream("tell me", session=tether.InMemorySession()):
        if isinstance(event, TextDelta):
            streamed.append(event.text)
        if isinstance(event, tether.Done):
            result = event.result
    assert result is not None and result.outcome.value == "completed", result
    assert "".join(streamed) == text
    assert result.output == text
    [reply] = [m for m in result.messages if m.role == "assistant"]
    thinking = [b for b in reply.content if isinstance(b, ThinkingBlock)]
    assert thinking[0].text == text


async def test_the_session_file_takes_the_joined_answer(tmp_path: Path) -> None:
    emoji = utf16_units("ok 😀")
    model = ScriptedProvider([Reply(chunks=[emoji[:4], emoji[4:]])])
    path = tmp_path / "s.jsonl"
    result = await tether.Agent(model).run("hi", session=tether.JsonlSession(path))
    assert result.output == "ok 😀"
    assert "😀" in path.read_text(encoding="utf-8")


async def test_a_half_that_never_gets_its_partner_becomes_a_replacement_character() -> None:
    model = ScriptedProvider([Reply(chunks=["a", "\ud83d"])])
    streamed = []
    async for event in tether.Agent(model).stream("hi"):
        if isinstance(event, TextDelta | ThinkingDelta):
            streamed.append(event.text)
        if isinstance(event, tether.Done):
            assert event.result.output == "a" + REPLACEMENT
    assert "".join(streamed) == "a" + REPLACEMENT
    assert join_surrogates("\ude00x\ud83d") == REPLACEMENT + "x" + REPLACEMENT
