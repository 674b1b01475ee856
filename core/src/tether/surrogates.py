"""UTF-16 surrogate halves in streamed text, joined back into characters.

Some servers stream text as JSON with ``\\uXXXX`` escapes and cut a chunk between the
two halves of a surrogate pair (an emoji, a rare CJK character): the SDK decodes each
chunk on its own, so one delta ends with a lone high surrogate and the next starts with
the low one. Python strings do not merge them when concatenated, and a lone surrogate
cannot be encoded as UTF-8 — the session write, the HTTP request of the next turn or the
terminal would fail on it.

:class:`SurrogateJoiner` holds a delta's trailing high surrogate back and puts it in
front of the next delta of the same kind, where the pair becomes one character;
:func:`join_surrogates` does the same for a whole string (the assembled message). A half
that has no partner becomes U+FFFD (the replacement character), so the text is always
valid Unicode. Text without surrogates passes untouched, at the cost of a comparison.
"""

from __future__ import annotations

import re

from .events import TextDelta, ThinkingDelta
from .messages import Message, TextBlock, ThinkingBlock
from .provider import ModelResponse, ProviderEvent

__all__ = ["REPLACEMENT", "SurrogateJoiner", "join_message_surrogates", "join_surrogates"]

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_HALVES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")

Delta = TextDelta | ThinkingDelta


def _joined(match: re.Match[str]) -> str:
    pair = match.group()
    if len(pair) == 1:
        return REPLACEMENT
    high, low = ord(pair[0]), ord(pair[1])
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def join_surrogates(text: str) -> str:
    """``text`` with each surrogate pair joined into its character and each lone
    surrogate replaced by U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return _HALVES.sub(_joined, text)


def join_message_surrogates(message: Message) -> Message:
    """``message`` itself when its text and thinking blocks hold no surrogates, else a
    copy with them joined (:func:`join_surrogates`)."""
    changed = False
    content = []
    for block in message.content:
        if isinstance(block, TextBlock | ThinkingBlock):
            text = join_surrogates(block.text)
            if text != block.text:
                block = block.model_copy(update={"text": text})
                changed = True
        content.append(block)
    return message.model_copy(update={"content": content}) if changed else message


class SurrogateJoiner:
    """Joins surrogate halves split across the deltas of one streamed response (text
    and thinking separately). Feed every delta through :meth:`join`; at the end of the
    stream, :meth:`flush` returns what is still held back (as U+FFFD deltas)."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[type[Delta], Delta] = {}

    def join(self, event: ProviderEvent) -> ProviderEvent | None:
        """The event to pass on (``event`` itself when nothing changes), or ``None`` when
        all of a delta is held back until the next one. A :class:`ModelResponse` gets its
        message's text joined (:func:`join_message_surrogates`); other events pass."""
        if isinstance(event, TextDelta | ThinkingDelta):
            return self._join_delta(event)
        if isinstance(event, ModelResponse):
            event.message = join_message_surrogates(event.message)
        return event

    def _join_delta(self, delta: Delta) -> Delta | None:
        text = delta.text
        if not self._held and _SURROGATE.search(text) is None:
            return delta
        kind = type(delta)
        earlier = self._held.pop(kind, None)
        if earlier is not None:
            text = earlier.text + text
        if text and "\ud800" <= text[-1] <= "\udbff":
            self._held[kind] = _copy(delta, text[-1])
            text = text[:-1]
        text = join_surrogates(text)
        if not text:
            return None
        return delta if text == delta.text else _copy(delta, text)

    def flush(self) -> list[Delta]:
        """The held-back halves that never got a partner, as U+FFFD deltas."""
        left = [_copy(delta, REPLACEMENT) for delta in self._held.values()]
        self._held.clear()
        return left


def _copy(delta: Delta, text: str) -> Delta:
    if isinstance(delta, ThinkingDelta):
        return ThinkingDelta(text, delta.signature)
    return TextDelta(text)
