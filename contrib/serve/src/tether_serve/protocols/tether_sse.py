"""tether's own events over SSE: one frame per event, ``event:`` is its ``type``.

The ``data`` of each frame is exactly :func:`tether.event_to_dict` of the event (the
schema documented in ``docs/serve.md``); the server adds ``approval_request`` (one per
call a suspended run waits on, just before its ``done``), ``needs_human`` (a tool raised
:class:`tether.NeedsHuman`; ``message`` is for the user) and ``error`` (the run ended
with an exception instead of ``done``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["TetherEncoder", "sse_frame"]


def sse_frame(data: str, event: str | None = None) -> str:
    """One SSE frame; ``data`` must be a single line (JSON is)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n"


class TetherEncoder:
    def __init__(self) -> None:
        self.headers: dict[str, str] = {}

    def encode(self, event: dict[str, Any]) -> list[str]:
        return [sse_frame(json.dumps(event, separators=(",", ":")), event["type"])]

    def trailer(self) -> list[str]:
        return []
