"""The wire protocols a run's events are streamed in, all from the one event stream.

Each protocol is an :class:`Encoder`: it is fed the run's events in order, as the JSON
objects of :func:`tether.event_to_dict` (plus those the server adds: ``approval_request``,
``needs_human`` and ``error``), and returns the Server-Sent Events frames for each. Encoders are
deterministic over that sequence, so a stream resumed with ``Last-Event-ID`` replays the
earlier events through a fresh encoder (discarding its frames) and continues from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .agui import AgUiEncoder
from .tether_sse import TetherEncoder
from .ui_stream import UiMessageStreamEncoder

__all__ = [
    "PROTOCOLS",
    "AgUiEncoder",
    "Encoder",
    "RunInfo",
    "TetherEncoder",
    "UiMessageStreamEncoder",
    "encoder_for",
]


class RunInfo(Protocol):
    """What an encoder may know about the run it encodes."""

    id: str
    session_id: str


class Encoder(Protocol):
    """Turns a run's events into SSE frames of one protocol."""

    headers: dict[str, str]
    """Response headers the protocol requires (besides ``content-type``)."""

    def encode(self, event: dict[str, Any]) -> list[str]:
        """The SSE frames (each ending in a blank line, without ``id:``) for ``event``."""
        ...

    def trailer(self) -> list[str]:
        """Frames sent once after the run's last event (e.g. ``data: [DONE]``)."""
        ...


PROTOCOLS: dict[str, Callable[[str, str, str | None], Encoder]] = {
    "tether": lambda run_id, session_id, client_run_id: TetherEncoder(),
    "ag-ui": lambda run_id, session_id, client_run_id: AgUiEncoder(
        thread_id=session_id, run_id=client_run_id or run_id
    ),
    "ui-message-stream": lambda run_id, session_id, client_run_id: UiMessageStreamEncoder(
        message_id=run_id
    ),
}
"""Protocol names as accepted in ``?protocol=``."""


def encoder_for(
    protocol: str, run_id: str, session_id: str, client_run_id: str | None = None
) -> Encoder:
    """A fresh encoder for ``protocol``; raises :class:`KeyError` for an unknown name."""
    return PROTOCOLS[protocol](run_id, session_id, client_run_id)
