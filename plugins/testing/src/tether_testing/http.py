"""A real HTTP server on loopback for testing provider plugins through their official SDKs.

The SDK under test talks to :attr:`FakeServer.url` over a real socket, so its own HTTP
client, SSE parser and error handling run. Each request is answered by the next queued
:class:`FakeResponse` (or by a handler function) and recorded in
:attr:`FakeServer.requests`, so tests can assert what the client sent.

::

    with FakeServer() as server:
        server.queue(FakeResponse.sse([("message_start", {...}), ...]))
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test", max_retries=0)

Streaming bodies are sent with chunked transfer encoding, one HTTP chunk per item of
``chunks`` and flushed immediately; ``drop_after=n`` closes the socket after ``n`` chunks
without finishing the response, which clients see as a connection dropped mid-stream.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import AsyncIterable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeResponse",
    "FakeServer",
    "RecordedRequest",
    "collect_announcing",
    "gated_chunks",
    "split_bytes",
]


@dataclass(slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(slots=True)
class FakeResponse:
    """One scripted HTTP response. ``chunks`` are written one at a time (streaming; a
    generator may pause between them, to play a stalled or trickling server); ``body`` is
    written at once with a Content-Length."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    chunks: Iterable[bytes] | None = None
    drop_after: int | None = None

    @classmethod
    def json(
        cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> FakeResponse:
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            body=json.dumps(payload).encode(),
        )

    @classmethod
    def sse(
        cls,
        events: Iterable[tuple[str | None, Any]],
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        split_at: Sequence[int] = (),
        drop_after: int | None = None,
    ) -> FakeResponse:
        """A ``text/event-stream`` response. Each event is ``(event_name or None, data)``;
        ``data`` that is not a string is JSON-encoded. ``split_at`` cuts the byte stream
        at those offsets (besides one chunk per event), e.g. inside a multi-byte character."""
        parts: list[bytes] = []
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            parts.append(frame.encode())
        chunks = split_bytes(b"".join(parts), _event_offsets(parts, split_at))
        return cls(
            status=status,
            headers={
                "content-type": "text/event-stream",
                "cache-control": "no-cache",
                **(headers or {}),
            },
            chunks=chunks,
            drop_after=drop_after,
        )


def _event_offsets(parts: Sequence[bytes], extra: Sequence[int]) -> list[int]:
    offsets: set[int] = set(extra)
    position = 0
    for part in parts[:-1]:
        position += len(part)
        offsets.add(position)
    return sorted(offsets)


def split_bytes(data: bytes, offsets: Sequence[int]) -> list[bytes]:
    """``data`` cut at the given byte offsets (out-of-range offsets are ignored)."""
    cuts = [0, *sorted(o for o in set(offsets) if 0 < o < len(data)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def gated_chunks(
    chunks: Iterable[bytes],
    gates: Sequence[tuple[bytes, threading.Event]],
    waited: list[bool],
    *,
    timeout: float = 10,
) -> Iterator[bytes]:
    """``chunks``, held back at gates: before the first chunk that contains a gate's
    marker, wait (at most ``timeout`` seconds) until the client sets that gate's event,
    and append to ``waited`` whether it did in time. Gates are passed in order.

    Use it as :attr:`FakeResponse.chunks` to prove the client acted on what it had
    received before the server sent any more."""
    pending = list(gates)
    for chunk in chunks:
        while pending and pending[0][0] in chunk:
            waited.append(pending.pop(0)[1].wait(timeout=timeout))
        yield chunk


async def collect_announcing(
    stream: AsyncIterable[Any], announced: Sequence[threading.Event]
) -> list[Any]:
    """Every event of a provider's ``stream``; on each ``ToolCallReady`` it sets
    ``announced[index]`` (where the list reaches that far), as a client starting the call
    at once would. With :func:`gated_chunks` holding the body back on those events, a
    test proves each call was announced before the server sent what follows it."""
    from tether.provider import ToolCallReady

    seen: list[Any] = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, ToolCallReady) and event.index < len(announced):
            announced[event.index].set()
    return seen


Handler = Callable[[RecordedRequest], FakeResponse]


class FakeServer:
    """An HTTP/1.1 server on 127.0.0.1 (a free port) answering with queued responses."""

    def __init__(self, handler: Handler | None = None) -> None:
        self._queue: list[FakeResponse] = []
        self._handler = handler
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        server = self

        class _RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                request = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                response = server._respond(request)
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                if response.chunks is None:
                    payload = response.body or b""
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for index, chunk in enumerate(response.chunks):
                    if response.drop_after is not None and index >= response.drop_after:
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(2)
                        return
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        class _Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that hangs up mid-stream (on purpose, in tests) is not news.
                import sys

                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._server = _Server(("127.0.0.1", 0), _RequestHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *responses: FakeResponse) -> FakeServer:
        with self._lock:
            self._queue.extend(responses)
        return self

    def _respond(self, request: RecordedRequest) -> FakeResponse:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
        if self._handler is not None:
            return self._handler(request)
        return FakeResponse.json(
            {
                "error": {
                    "message": f"FakeServer: no response queued for {request.method} {request.path}"
                }
            },
            status=599,
        )

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
