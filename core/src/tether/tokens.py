"""Fast, script-aware token estimates, anchored to what providers report.

Counting tokens exactly needs each provider's tokenizer (and for some, a network call).
The harness only needs to know, often and cheaply, how close a history is to the model's
context window, so it estimates instead: :func:`estimate_tokens` weighs the UTF-8 bytes
of a text with one ``bytes.translate`` table and sums the weights with ``zlib.adler32``
(all in C, no Python loop over characters), with weights fitted against OpenAI's
``o200k_base`` tokenizer. It has separate weights for

- Latin text: lower-case and capital letters, spaces, accented letters;
- code and structure: punctuation by kind, quotes, brackets, newlines, tabs, digits;
- CJK: Han ideographs, kana, Hangul, full-width punctuation;
- other scripts: Greek, Cyrillic and other two-byte scripts (Hebrew, Arabic), Indic and
  South-East Asian scripts, symbols and emoji.

Per-character weights are as accurate as weights of neighbouring pairs of characters
were on text they were not fitted to (both are off by up to about 15% on some
paragraphs), and take one pass instead of five.

It stays within about ±10% of ``o200k_base`` on prose, source code, Chinese, Japanese,
Korean, JSON and mixed text of a few kilobytes, and is one to two orders of magnitude
faster than the tokenizer itself (see ``bench/tokens_bench.py``).

Other providers' tokenizers differ by a few tens of percent. When a provider reports the
real prompt size of a request, :func:`estimate_context` anchors to it: the reported
count stands for the part of the history it covered, only newer messages are estimated,
and they are scaled by how far the estimate was off for the reported part.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from zlib import adler32

from .messages import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock

if TYPE_CHECKING:
    from .messages import Message
    from .provider import ToolDefinition

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "estimate_context",
    "estimate_message",
    "estimate_messages",
    "estimate_request",
    "estimate_tokens",
    "estimate_tools",
]

IMAGE_TOKENS = 1_600
"""Estimate for one image (about a megapixel at common providers' rates)."""

MESSAGE_OVERHEAD = 4
"""Tokens a chat format spends per message on role markers and separators."""

_BLOCK_OVERHEAD = 8  # per tool call / tool result: ids, names, wrappers
_TOOL_OVERHEAD = 12  # per tool definition


def _table(default: int, mapping: Mapping[bytes, int]) -> bytes:
    table = bytearray([default]) * 256
    for keys, value in mapping.items():
        for key in keys:
            table[key] = value
    return bytes(table)


# Tokens per byte, in 1/40 token. UTF-8 continuation bytes (0x80-0xBF) are deleted before
# weighing, so a multi-byte character is weighed by its lead byte, which names its block.
#
# ASCII: in English prose and source code a token is a word or identifier with its leading
# space, or a punctuation run, so the per-byte weights of letters, spaces and punctuation
# carry the word and run lengths of such text. Fitted by least squares (relative error)
# against o200k_base on a few thousand samples of 0.4-4 kB of prose (package descriptions,
# licences, documentation), Python source and JSON (indented and compact), with every
# ASCII weight at most 31 so that adler32 sums 2 kB of ASCII in one call.
#
# Other scripts: a Han character costs 0.74 tokens in simplified Chinese (traditional about
# 0.9); kana and Hangul weights are fitted on Japanese and Korean prose, mixed with
# English and code; Greek, Cyrillic and accented Latin letters on European prose.
_UNIT = 40
_WEIGHTS = _table(
    40,  # private use, emoji and other astral characters, invalid lead bytes
    {
        bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]): 31,  # controls
        bytes(range(0x61, 0x7B)): 8,  # lower-case letters
        bytes(range(0x41, 0x5B)): 8,  # capitals
        bytes(range(0x30, 0x3A)): 31,  # digits (grouped by up to three)
        b" ": 3,
        b"\n\r": 31,
        b"\t": 31,
        b'"': 22,
        b"'`": 23,
        b"()[]{}": 20,
        b".,;:!?": 31,
        b"=+-*/<>%&|^~": 15,
        b"_": 2,
        b"#@$\\": 30,
        bytes([0xC2, 0xE2]): 20,  # Latin-1 symbols, general punctuation, arrows, box drawing
        bytes(range(0xC3, 0xC6)): 40,  # U+00C0-017F: accented Latin letters
        bytes(range(0xC6, 0xCD)): 20,  # Latin extended, IPA, combining marks
        bytes(range(0xCD, 0xD0)): 18,  # Greek
        bytes(range(0xD0, 0xE0)): 12,  # Cyrillic, Armenian, Hebrew, Arabic, ...
        bytes([0xE0, 0xE1]): 20,  # Indic, Thai, Lao, Tibetan, Myanmar, Georgian, ...
        bytes([0xE3]): 32,  # CJK punctuation, Hiragana, Katakana
        bytes(range(0xE4, 0xEA)): 30,  # CJK unified ideographs
        bytes(range(0xEA, 0xEE)): 28,  # Hangul syllables
        bytes([0xEF]): 24,  # full-width forms
    },
)
_CONTINUATION = bytes(range(0x80, 0xC0))
# Bytes per adler32 call such that its byte sum never wraps (modulo 65521).
_ASCII_SLICE = 65_519 // max(_WEIGHTS[:0x80])
_SLICE = 65_519 // max(_WEIGHTS)


def estimate_tokens(text: str) -> int:
    """Estimated ``o200k_base`` token count of ``text`` (0 for an empty string).

    How: one ``bytes.translate`` turns the UTF-8 bytes into per-character weights (and
    drops continuation bytes), and ``zlib.adler32`` sums the weights in C, 1.6-2 kB per
    call. Cost: two passes over the bytes, no Python-level loop per character.
    """
    if not text:
        return 0
    if text.isascii():
        raw = text.encode("ascii")
        weights = raw.translate(_WEIGHTS)
        single = len(weights) <= _ASCII_SLICE
    else:
        raw = text.encode("utf-8", "surrogatepass")
        weights = raw.translate(_WEIGHTS, _CONTINUATION)
        single = len(weights) <= _SLICE
    units = (adler32(weights) & 0xFFFF) - 1 if single else _weight_sum(weights)
    size = len(raw)
    # Never less than one token per 8 bytes (dense identifiers), nor more than one per byte.
    return max(1, min(size, max(round(units / _UNIT), size // 8)))


def _weight_sum(weights: bytes) -> int:
    """Sum of ``weights`` of any length, one adler32 call per slice that cannot wrap."""
    view = memoryview(weights)
    total = 0
    for offset in range(0, len(weights), _SLICE):
        total += (adler32(view[offset : offset + _SLICE]) & 0xFFFF) - 1
    return total


def estimate_message(message: Message) -> int:
    """Estimated tokens of one message as a provider would send it."""
    total = MESSAGE_OVERHEAD
    for block in message.content:
        if isinstance(block, TextBlock):
            total += estimate_tokens(block.text)
        elif isinstance(block, ToolCallBlock):
            arguments = (
                block.raw_arguments if block.raw_arguments is not None else _json(block.arguments)
            )
            total += _BLOCK_OVERHEAD + estimate_tokens(block.name) + estimate_tokens(arguments)
        elif isinstance(block, ToolResultBlock):
            total += _BLOCK_OVERHEAD
            if isinstance(block.content, str):
                total += estimate_tokens(block.content)
            else:
                for part in block.content:
                    total += (
                        estimate_tokens(part.text) if isinstance(part, TextBlock) else IMAGE_TOKENS
                    )
        elif isinstance(block, ImageBlock):
            total += IMAGE_TOKENS
        elif isinstance(block, ThinkingBlock):
            total += estimate_tokens(block.text) + (
                len(block.signature) // 4 if block.signature else 0
            )
        else:
            total += estimate_tokens(_json(block.model_dump(mode="json")))
    return total


def estimate_messages(messages: Sequence[Message]) -> int:
    """Estimated tokens of ``messages``.

    Called after every tool round on a history that only grows, so it is incremental: the
    total of a history seen before (same first message, and the message where the last
    count ended is still in place) is extended by the new messages only, and each
    message's estimate is remembered. Messages are treated as immutable once they are in a
    history (a message whose number of blocks changed is estimated anew).
    """
    count = len(messages)
    if count == 0:
        return 0
    first = messages[0]
    known = _RUNNING_TOTALS.get(id(first))
    start, total = 0, 0
    if known is not None:
        first_ref, last_ref, seen, seen_total = known
        if first_ref() is first and seen <= count and last_ref() is messages[seen - 1]:
            start, total = seen, seen_total
    for index in range(start, count):
        total += _message_tokens(messages[index])
    if len(_RUNNING_TOTALS) >= _CACHE_LIMIT:
        _RUNNING_TOTALS.clear()
    _RUNNING_TOTALS[id(first)] = (weakref.ref(first), weakref.ref(messages[-1]), count, total)
    return total


_CACHE_LIMIT = 4096
_RUNNING_TOTALS: dict[int, tuple[weakref.ref[Message], weakref.ref[Message], int, int]] = {}
_MESSAGE_TOKENS: dict[int, tuple[weakref.ref[Message], int, int]] = {}


def _message_tokens(message: Message) -> int:
    key = id(message)
    known = _MESSAGE_TOKENS.get(key)
    blocks = len(message.content)
    if known is not None and known[0]() is message and known[1] == blocks:
        return known[2]
    tokens = estimate_message(message)
    if len(_MESSAGE_TOKENS) >= _CACHE_LIMIT * 64:
        _MESSAGE_TOKENS.clear()
    _MESSAGE_TOKENS[key] = (weakref.ref(message), blocks, tokens)
    return tokens


def estimate_tools(tools: Sequence[ToolDefinition]) -> int:
    """Estimated tokens of tool definitions (name, description, JSON schema)."""
    return sum(
        _TOOL_OVERHEAD
        + estimate_tokens(t.name)
        + estimate_tokens(t.description)
        + estimate_tokens(_json(t.parameters))
        for t in tools
    )


def estimate_request(
    system: str, tools: Sequence[ToolDefinition], messages: Sequence[Message]
) -> int:
    """Estimated prompt tokens of a request: system prompt, tool definitions, history."""
    return estimate_tokens(system) + estimate_tools(tools) + estimate_messages(messages)


def estimate_context(
    system: str,
    tools: Sequence[ToolDefinition],
    messages: Sequence[Message],
    *,
    reported_input_tokens: int | None = None,
    reported_messages: int = 0,
) -> int:
    """Prompt tokens of a request, anchored to a provider's report when there is one.

    ``reported_input_tokens`` is what the provider counted for a request made of
    ``system``, ``tools`` and the first ``reported_messages`` messages. The result is
    that count plus an estimate of the newer messages, scaled by the ratio between the
    reported and the estimated size of the covered part (clamped to 0.5-2, so one odd
    report cannot skew it far). Without a report it is :func:`estimate_request`.
    """
    if (
        reported_input_tokens is None
        or reported_input_tokens <= 0
        or not 0 <= reported_messages <= len(messages)
    ):
        return estimate_request(system, tools, messages)
    covered = estimate_request(system, tools, messages[:reported_messages])
    ratio = min(2.0, max(0.5, reported_input_tokens / covered)) if covered > 0 else 1.0
    return reported_input_tokens + round(estimate_messages(messages[reported_messages:]) * ratio)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
