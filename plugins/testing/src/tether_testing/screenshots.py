"""Reading screenshots in tests without an imaging library.

Headless Chromium writes 8-bit, non-interlaced PNG files; :func:`read_png` decodes them
with the standard library alone, so a test can check what a rendered page shows (a
colour present, a page mostly blank) on any machine that has the browser.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

__all__ = ["read_png"]


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows (alpha dropped) of an 8-bit, non-interlaced PNG.

    Raises ``ValueError`` for anything else: not a PNG, another bit depth or colour type.
    """
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG file.")
    position, chunks, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    if depth != 8 or colour_type not in (2, 6):
        raise ValueError(f"{path}: only 8-bit RGB or RGBA PNG files are read.")
    channels = 4 if colour_type == 6 else 3
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        line = _unfilter(raw, y, stride, channels, previous)
        rows.append(
            bytes(line) if channels == 3 else bytes(line[i] for i in range(stride) if i % 4 != 3)
        )
        previous = line
    return width, height, rows


def _unfilter(raw: bytes, y: int, stride: int, channels: int, previous: bytearray) -> bytearray:
    """Row ``y`` of the image with its PNG filter undone."""
    kind = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
    for x in range(stride):
        left = line[x - channels] if x >= channels else 0
        up = previous[x]
        corner = previous[x - channels] if x >= channels else 0
        if kind == 1:
            line[x] = (line[x] + left) & 0xFF
        elif kind == 2:
            line[x] = (line[x] + up) & 0xFF
        elif kind == 3:
            line[x] = (line[x] + (left + up) // 2) & 0xFF
        elif kind == 4:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            best = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[x] = (line[x] + best) & 0xFF
    return line
