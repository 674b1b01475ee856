"""Fast, script-aware token estimates, anchored to what providers report.

Counting tokens exactly needs each provider's tokenizer (and for some, a network call).
The harness only needs to know, often and cheaply, how close a history is to the model's
context window, so it estimates instead: :func:`estimate_tokens` weighs the UTF-8 bytes
of a text with ``bytes.translate`` tables and sums the weights with ``zlib.adler32`` (all
in C, no Python loop over characters), with weights fitted against OpenAI's
``o200k_base`` tokenizer. ASCII text, the bulk of what a coding agent sends, takes one
table of per-byte weights; other text is weighed by pairs of neighbouring character
classes. It has separate weights for

- Latin text: words, capitalised and camel-case pieces, accented letters;
- code and structure: punctuation runs, quotes, indentation, blank lines, digit runs;
- CJK: Han ideographs, kana, Hangul (with word spacing), full-width punctuation;
- other scripts: two-byte scripts (Cyrillic, Greek, Hebrew, Arabic), Indic and South-East
  Asian scripts, symbols and emoji.

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


# Character classes. Continuation bytes (0x80-0xBF) are deleted before classifying, so a
# multi-byte character is classified by its UTF-8 lead byte, which names its block.
_CLASS_NAMES = (
    "lower", "upper", "digit", "space", "newline", "tab", "punct", "quote",
    "accent", "2-byte", "indic", "symbol", "kana", "han", "hangul", "other",
)  # fmt: skip
_CLASS_OF_BYTE = _table(
    15,  # other: full-width forms, private use, emoji and other astral characters
    {
        bytes(range(0x61, 0x7B)): 0,
        bytes(range(0x41, 0x5B)): 1,
        bytes(range(0x30, 0x3A)): 2,
        b" ": 3,
        b"\n\r": 4,
        b"\t": 5,
        bytes(b for b in range(0x21, 0x7F) if not chr(b).isalnum() and b != 0x22): 6,
        bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]): 6,
        b'"': 7,
        bytes(range(0xC3, 0xC6)): 8,  # U+00C0-017F: accented Latin letters
        bytes(range(0xC6, 0xE0)): 9,  # Greek, Cyrillic, Armenian, Hebrew, Arabic, ...
        bytes([0xE0, 0xE1]): 10,  # Indic, Thai, Lao, Tibetan, Myanmar, Georgian, ...
        bytes([0xC2, 0xE2]): 11,  # Latin-1 symbols, general punctuation, arrows, box drawing
        bytes([0xE3]): 12,  # CJK punctuation, Hiragana, Katakana
        bytes(range(0xE4, 0xEA)): 13,  # CJK unified ideographs
        bytes(range(0xEA, 0xEE)): 14,  # Hangul syllables
    },
)
_CONTINUATION = bytes(range(0x80, 0xC0))

# Tokens per character, in 1/64 token, by (class of the previous character, class of
# this one): rows are the previous class, columns this one. Fitted by least squares
# (relative error) against o200k_base on English and European prose, source code, JSON,
# simplified Chinese, Japanese, Korean, Cyrillic and Greek text, and random identifiers and base64.
# The pair captures what a tokenizer's pre-split does: a space or punctuation before a
# letter starts a word, digits are grouped by three, CJK characters merge in pairs.
# Two cells are set from direct measurement instead: a Han character after another costs
# 0.74 tokens (simplified Chinese; traditional costs about 0.9), and full-width
# punctuation after Han mostly merges into a neighbouring token.
_WEIGHTS_64THS = (
    # lowe uppe digi spac newl  tab punc quot acce 2-by indi symb kana  han hang othe
    (-2, 56, 65, 53, 21, 3, 43, 12, 83, 26, 32, 30, 50, 55, 50, 64),  # after lower
    (45, 14, 102, -4, 40, 6, 28, 77, 96, 26, 32, 28, 50, 55, 50, 64),  # after upper
    (28, 138, 31, -43, 34, 19, 78, 65, 109, 26, 32, 28, 50, 83, -9, 64),  # after digit
    (26, 12, 137, 1, -12, 11, 35, 83, -8, 32, 32, -4, 11, 15, 44, 64),  # after space
    (26, 32, -24, 63, 47, -27, 47, 2, 109, 17, 32, 8, -11, 64, 50, 64),  # after newline
    (-10, -10, 41, 5, -19, 30, 58, 66, 109, -49, 32, 28, 50, 55, 50, 64),  # after tab
    (82, 35, 29, 56, -24, 41, 8, -22, -44, 53, 32, 28, 8, -1, 65, 64),  # after punct
    (58, 40, -2, 19, 78, -64, 28, -28, 109, 26, 32, 28, 50, 55, 50, 64),  # after quote
    (44, 49, 64, 31, 6, -64, -4, 4, 34, 26, 32, 28, 50, 55, 50, 64),  # after accent
    (6, 42, 64, 87, 12, -64, -47, 66, 109, 8, 32, 28, 50, 55, 50, 64),  # after 2-byte
    (15, 42, 64, 7, -19, -64, 24, 66, 109, 26, 32, 28, 50, 55, 50, 64),  # after indic
    (28, 42, 64, 3, 21, -64, 24, 66, 109, 26, 32, 17, 50, 55, 50, 64),  # after symbol
    (15, 16, 64, 15, -29, -64, 18, 66, 109, 26, 32, 28, 48, 64, 50, 64),  # after kana
    (15, 42, 37, 40, 27, -64, 4, 66, 109, 26, 32, 52, 46, 47, 50, 40),  # after han
    (15, 42, 64, 62, 9, -64, 1, 66, 109, 26, 32, 28, 50, 55, 23, 64),  # after hangul
    (15, 42, 64, 7, 6, -64, 24, 66, 109, 26, 32, 28, 50, 33, 50, 64),  # after other
)
_UNIT = 64
_OFFSET = 64  # stored weights are shifted to be non-negative bytes
_PAIR_WEIGHTS = bytes(
    _WEIGHTS_64THS[code >> 4][code & 15] + _OFFSET if code >> 4 < 16 else 0 for code in range(256)
)
# ASCII text is weighed byte by byte, in 1/40 token: in English prose and source code a
# token is a word or identifier with its leading space, or a punctuation run, so the
# per-byte weights of letters, spaces and punctuation carry the word and run lengths of
# such text. Fitted by least squares (relative error) against o200k_base on a few thousand
# samples of 0.4-4 kB of prose (package descriptions, licences, documentation), Python
# source and JSON (indented and compact), with every weight at most 31 so that adler32
# sums 2 kB in one call.
_ASCII_UNIT = 40
_ASCII_WEIGHTS = _table(
    31,  # control characters (a token each), and bytes that never occur in ASCII text
    {
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
    },
)
_ASCII_SLICE = 65_519 // max(_ASCII_WEIGHTS)  # adler32's byte sum over a slice never wraps
_SLICE = 256  # 256 * 255 < 65521, so adler32's byte sum over a slice never wraps
_START = 3 << 4  # the first character is weighted as if it followed a space
_CHUNK = 16_384  # big-integer work stays in cache


def estimate_tokens(text: str) -> int:
    """Estimated ``o200k_base`` token count of ``text`` (0 for an empty string).

    How: ASCII text (prose, code, JSON) weighs each byte by its class in one
    ``bytes.translate`` and sums the weights with ``zlib.adler32``. Other text gives each
    character a 4-bit class; the classes are read as one big integer, so
    ``classes | classes << 12`` pairs every class with its predecessor in one operation; a
    translation table turns each pair into its weight; ``zlib.adler32`` sums the weights
    in C. Cost: one to a few passes over the bytes, no Python-level loop per character.
    """
    if not text:
        return 0
    if text.isascii():
        weights = text.encode("ascii").translate(_ASCII_WEIGHTS)
        size = len(weights)
        small = size <= _ASCII_SLICE
        units = (adler32(weights) & 0xFFFF) - 1 if small else _ascii_units(weights)
        return max(1, min(size, max(round(units / _ASCII_UNIT), size // 8)))
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASS_OF_BYTE, _CONTINUATION)
    count = len(classes)
    total = 0
    for start in range(0, count, _CHUNK):
        if start == 0:
            total += _weight_sum(classes[:_CHUNK], _START)
        else:  # one character of overlap gives the first one its predecessor
            total += _weight_sum(classes[start - 1 : start + _CHUNK], 0, skip_first=True)
    units = total - _OFFSET * count
    return _clamp(round(units / _UNIT), len(raw))


def _ascii_units(weights: bytes) -> int:
    """Sum of byte ``weights`` longer than one adler32 slice."""
    view = memoryview(weights)
    units = 0
    for offset in range(0, len(weights), _ASCII_SLICE):
        units += (adler32(view[offset : offset + _ASCII_SLICE]) & 0xFFFF) - 1
    return units


def _clamp(tokens: int, size: int) -> int:
    """Never less than one token per 8 bytes (dense identifiers), nor more than one per byte."""
    return max(1, min(size, max(tokens, size // 8)))


def _weight_sum(classes: bytes, start: int, *, skip_first: bool = False) -> int:
    """Sum of the pair weights of ``classes`` (offset units)."""
    count = len(classes)
    value = int.from_bytes(classes, "little")
    pairs = (value | value << 12 | start).to_bytes(count + 2, "little")[skip_first:count]
    weights = pairs.translate(_PAIR_WEIGHTS)
    total = 0
    for offset in range(0, len(weights), _SLICE):
        total += (adler32(weights[offset : offset + _SLICE]) & 0xFFFF) - 1
    return total


def estimate_message(message: Message) -> int:
    """Estimated tokens of one message as a provider would send it."""
    from .messages import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock

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
