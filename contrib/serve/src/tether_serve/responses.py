"""An SSE response that notices a client going away even while the run is quiet."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse"]


class EventStreamResponse(StreamingResponse):
    """``text/event-stream`` whose body iterator is cancelled as soon as the client
    disconnects (whatever ASGI spec version the server speaks), so the stream's
    ``finally`` runs at once; ``on_close`` is called once when the response is over,
    however it ended, so the server can cancel an abandoned run."""

    media_type = "text/event-stream"

    def __init__(
        self,
        content: AsyncIterator[str],
        headers: Mapping[str, str],
        on_close: Callable[[], None] | None = None,
    ) -> None:
        base = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        super().__init__(content, headers={**base, **headers})
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = asyncio.ensure_future(self.stream_response(send))
        listening = asyncio.ensure_future(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait({streaming, listening}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, listening):
                if not task.done():
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError, OSError):
                    await task
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()  # runs the stream's `finally` now, not when collected
            if self.on_close is not None:
                self.on_close()  # once per response, whether or not the body started
