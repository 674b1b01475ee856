"""Bytes to text and back: binary detection, encoding guesses, atomic writes."""

from __future__ import annotations

import codecs
import contextlib
import os
import tempfile
from pathlib import Path

from tether.errors import ToolError

__all__ = ["atomic_write", "decode", "describe_binary", "looks_binary", "read_bytes"]

_SNIFF = 8192
_NEW_FILE_MODE = 0o644
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SIGNATURES = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or a format built on ZIP: docx, xlsx, jar, wheel)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"SQLite format 3", "an SQLite database"),
)


def _bom_encoding(data: bytes) -> str | None:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    return None


def looks_binary(data: bytes) -> bool:
    """True for data that is not text: a NUL byte early on and no UTF-16/32 byte-order mark."""
    return _bom_encoding(data) is None and b"\x00" in data[:_SNIFF]


def describe_binary(data: bytes) -> str:
    """A short guess at what binary data is, for error messages."""
    for signature, name in _SIGNATURES:
        if data.startswith(signature):
            return name
    return "binary data"


def decode(data: bytes, encoding: str | None = None) -> tuple[str, str]:
    """``(text, encoding used)``. Without an explicit encoding: a byte-order mark, then
    UTF-8, then the best guess of charset-normalizer.

    :raises ToolError: the data is binary, the encoding is unknown, or nothing decodes it.
    """
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ToolError(
                f"Unknown encoding {encoding!r}. Use a Python codec name such as 'utf-8' or 'latin-1'."
            ) from None
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError as exc:
            raise ToolError(
                f"The file is not valid {encoding}: {exc.reason} at byte {exc.start}."
            ) from None
    bom = _bom_encoding(data)
    if bom is not None:
        return data.decode(bom, errors="replace"), bom
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:262144]).best()
    if best is None or best.encoding is None:
        raise ToolError(
            "The file is neither UTF-8 nor a recognisable text encoding; it looks like binary data. "
            "Pass `encoding` if you know it."
        )
    return data.decode(best.encoding, errors="replace"), best.encoding


def read_bytes(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file, opened without following a final symlink."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ToolError(f"Cannot open {path.name}: {exc.strerror}.") from None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` all at once: a temporary file in the same directory is
    written, flushed to disk and renamed over the target, so readers see the old or the
    new content, never a mix. An existing file keeps its permission bits; a new one gets ``rw-r--r--``."""
    mode = _NEW_FILE_MODE
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
