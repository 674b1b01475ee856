"""Checking an image before it enters a session.

An image block is sent to the model again on every later turn, so one a provider
rejects (base64 that does not decode, an HTML page labelled ``image/png``, bytes over
its size limit) would make every later request on the session fail. Images are
therefore checked where they enter — a tool's result (MCP results included) and a
prompt's attachments — by :func:`check_image`:

- inline ``data`` must be base64 (whitespace between lines is allowed and removed);
- the decoded bytes must be a PNG, JPEG, GIF or WebP image, recognised by their
  signature (the first bytes), whatever type the block claims; the block's
  ``mime_type`` is set to the recognised type;
- the decoded bytes must not exceed the cap (:data:`DEFAULT_MAX_IMAGE_BYTES` unless
  given).

A rejected image raises :class:`~tether.errors.InvalidImageError` saying what was wrong;
the tool-result path turns that into an error result, the prompt path raises it to the
caller. An image given by ``url`` carries no bytes and is passed on unchecked.
"""

from __future__ import annotations

import base64
import binascii
import re

from .errors import InvalidImageError
from .messages import ImageBlock

__all__ = ["ALLOWED_IMAGE_TYPES", "DEFAULT_MAX_IMAGE_BYTES", "check_image", "sniff_image_type"]

ALLOWED_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types tether accepts: those every supported provider takes."""

DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Decoded bytes one image may hold (5 MiB, Anthropic's per-image limit)."""

_WHITESPACE = re.compile(rb"[ \t\r\n]+")


def sniff_image_type(raw: bytes) -> str | None:
    """The MIME type of ``raw`` by its signature, if it is an allowed image type."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(raw) >= 12 and raw.startswith(b"RIFF") and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def check_image(
    block: ImageBlock, *, max_bytes: int | None = DEFAULT_MAX_IMAGE_BYTES
) -> ImageBlock:
    """``block`` if it is a valid image within ``max_bytes`` (``None``: no cap), or a copy
    with its ``mime_type`` (and base64 spelling) corrected; raises
    :class:`~tether.errors.InvalidImageError` otherwise (see the module docstring)."""
    if block.data is None:
        return block
    claimed = block.mime_type
    try:
        encoded = _WHITESPACE.sub(b"", block.data.encode("ascii"))
        raw = base64.b64decode(encoded, validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise InvalidImageError(
            f"An image (claimed type {claimed!r}) is not valid base64, so it cannot be "
            "sent to a model. Encode the image's bytes with standard base64."
        ) from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise InvalidImageError(
            f"An image ({claimed}) is {_mb(len(raw))}, over the limit of {_mb(max_bytes)} "
            "per image. Send a smaller or downscaled image."
        )
    actual = sniff_image_type(raw)
    if actual is None:
        raise InvalidImageError(
            f"An image claimed to be {claimed!r} is not a PNG, JPEG, GIF or WebP image (its "
            f"bytes begin {raw[:8]!r}). Send one of those formats."
        )
    canonical = base64.b64encode(raw).decode("ascii")
    if actual == claimed and canonical == block.data:
        return block
    return block.model_copy(update={"mime_type": actual, "data": canonical})


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
