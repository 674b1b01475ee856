"""Turning whatever a tool returned into the tool result the model and the session see.

:func:`tool_result` never raises for a tool's return value. Its contract:

- strings pass through; a :class:`~tether.messages.TextBlock`, an
  :class:`~tether.messages.ImageBlock` or a list of them become blocks; ``None`` is empty;
  anything else is serialised as JSON (pydantic models with their own serialiser), and
  a value that cannot be (its ``str()`` raises, say) becomes an error result;
- text that cannot be encoded as UTF-8 (lone surrogates, which is how Python spells a
  file name with undecodable bytes) makes an error result showing the text with those
  characters escaped, so nothing unwritable reaches the session;
- secrets are scrubbed (:func:`tether.scrub.scrub`): a tool that prints the environment
  does not hand the API key to the model or the session;
- every inline image is checked (:func:`tether.images.check_image`): one that is not
  base64 or not a PNG, JPEG, GIF or WebP image by its bytes is replaced by a note saying
  why, and the result becomes an error result, so nothing a provider would reject on
  every later turn reaches the session; a mislabelled image gets its real type;
- the cap bounds the *whole* result: all text blocks together stay within
  ``max_output_chars`` (head and tail kept around a visible marker), and inline images
  together within ``max_image_bytes`` (decoded); an image over the budget is replaced by
  a note saying what was left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .errors import InvalidImageError
from .images import check_image
from .messages import ImageBlock, TextBlock, ToolResultBlock
from .scrub import scrub

__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "TRUNCATION_MARKER",
    "cap_text",
    "error_result",
    "tool_result",
]

DEFAULT_MAX_OUTPUT_CHARS = 50_000
"""Characters of text one tool result may hold (all its text blocks together)."""

DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Decoded bytes of inline images one tool result may hold (5 MiB, Anthropic's per-image
limit; every image stays in the history and is sent again on every turn)."""

TRUNCATION_MARKER = (
    "\n\n[... {omitted} characters omitted: output exceeded {limit} characters ...]\n\n"
)

Content = str | list[TextBlock | ImageBlock]


def cap_text(text: str, limit: int | None) -> str:
    """``text`` cut to about ``limit`` characters, keeping head and tail around a marker."""
    if limit is None or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return (
        text[:head]
        + TRUNCATION_MARKER.format(omitted=omitted, limit=limit)
        + (text[-tail:] if tail else "")
    )


def error_result(call_id: str, message: str) -> ToolResultBlock:
    """An ``is_error`` result; the message is scrubbed of secrets and made encodable."""
    return ToolResultBlock(call_id=call_id, content=_encodable(scrub(message)), is_error=True)


def tool_result(
    call_id: str,
    value: Any,
    *,
    tool_name: str,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
    max_image_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES,
) -> ToolResultBlock:
    """The result for ``value`` returned by tool ``tool_name``; see the module docstring."""
    try:
        content = _content(value)
    except Exception as exc:
        return error_result(
            call_id,
            f"Tool `{tool_name}` returned a value that could not be turned into text "
            f"({type(value).__name__}: {_describe(exc)}). The tool ran, but its result is lost.",
        )
    content, rejected = _checked_images(content)
    content = _capped(_scrubbed(content, max_output_chars), max_output_chars, max_image_bytes)
    bad = _unencodable_text(content)
    if bad is not None:
        return error_result(
            call_id,
            f"Tool `{tool_name}` returned text that is not valid Unicode (undecodable bytes, "
            "e.g. in a file name); those characters are shown escaped below.\n" + _encodable(bad),
        )
    return ToolResultBlock(call_id=call_id, content=content, is_error=rejected)


def _checked_images(content: Content) -> tuple[Content, bool]:
    """``content`` with each invalid image replaced by a note; whether any was."""
    if isinstance(content, str) or not any(isinstance(b, ImageBlock) for b in content):
        return content, False
    checked: list[TextBlock | ImageBlock] = []
    rejected = False
    for block in content:
        if isinstance(block, ImageBlock):
            try:
                block = check_image(block, max_bytes=None)  # the result's budget caps size
            except InvalidImageError as exc:
                rejected = True
                checked.append(TextBlock(text=f"[image rejected: {exc}]"))
                continue
        checked.append(block)
    return checked, rejected


# -- internals ---------------------------------------------------------------------------
def _content(value: Any) -> Content:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, TextBlock | ImageBlock):
        return [value]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, TextBlock | ImageBlock) for v in value)
    ):
        return list(value)
    if type(value) is int:
        return str(value)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _scrubbed(content: Content, limit: int | None) -> Content:
    # Pre-cut very long text so scrubbing stays cheap: the final cap keeps a head and a
    # tail well inside what the pre-cut kept, so no secret is split at a kept edge.
    pre = None if limit is None else limit * 4
    if isinstance(content, str):
        return scrub(cap_text(content, pre))
    return [_scrubbed_block(b, pre) if isinstance(b, TextBlock) else b for b in content]


def _scrubbed_block(block: TextBlock, pre: int | None) -> TextBlock:
    """``block`` itself when scrubbing and pre-cutting leave its text as it is."""
    text = scrub(cap_text(block.text, pre))
    return block if text == block.text else TextBlock(text=text)


def _capped(content: Content, limit: int | None, image_limit: int | None) -> Content:
    if isinstance(content, str):
        return cap_text(content, limit)
    texts = [b for b in content if isinstance(b, TextBlock)]
    if limit is not None and sum(len(b.text) for b in texts) > limit:
        joined = TextBlock(text=cap_text("\n\n".join(b.text for b in texts), limit))
        merged: list[TextBlock | ImageBlock] = []
        for block in content:
            if isinstance(block, ImageBlock):
                merged.append(block)
            elif block is texts[0]:
                merged.append(joined)
        content = merged
    if image_limit is None:
        return content
    spent = 0
    kept: list[TextBlock | ImageBlock] = []
    for block in content:
        if isinstance(block, ImageBlock) and block.data is not None:
            size = len(block.data) * 3 // 4
            if spent + size > image_limit:
                kept.append(
                    TextBlock(
                        text=f"[image omitted: {_mb(size)} of {block.mime_type} is over the "
                        f"limit of {_mb(image_limit)} of images per tool result. Return a "
                        "smaller or downscaled image.]"
                    )
                )
                continue
            spent += size
        kept.append(block)
    return kept


def _unencodable_text(content: Content) -> str | None:
    texts: Sequence[str] = (
        [content]
        if isinstance(content, str)
        else [b.text for b in content if isinstance(b, TextBlock)]
    )
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "\n\n".join(texts)
    return None


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _describe(exc: BaseException) -> str:
    try:
        detail = str(exc)
    except Exception:
        detail = ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
