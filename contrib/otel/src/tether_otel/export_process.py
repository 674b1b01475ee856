"""Encoding and exporting spans in a child process.

An application that traces pays for its spans twice in its own process: once to record
them and once to encode and send them, on the batch processor's thread but holding the
GIL, so the second part slows the application's threads as much as the first. With
``OtlpBatchSpanProcessor(exporter, export_process=True)`` (what ``[observers.otel]``
builds) the second part runs in a child process, as a collector sidecar would: the
processor's thread writes each batch of span records (plain values, see
:data:`~tether_otel.otlp.SpanRecord`) to the child's standard input with :mod:`marshal`,
and the child encodes them to OTLP and sends them with an exporter made from the same
arguments (:attr:`~tether_otel.otlp.OTLPSpanExporter.arguments`, written to the pipe,
never to its command line or environment: headers may hold credentials) and the same
``OTEL_EXPORTER_OTLP_*`` variables.

The child exports each batch as one request, in order. It ignores ``SIGINT`` (a Ctrl-C
in the terminal reaches the whole process group) and exits once its standard input
closes, after exporting what it was sent: when the processor shuts down, and when the
application dies however it dies. The parent never waits on it without a deadline.

Frames, both ways, are a 4-byte little-endian length and a marshalled tuple whose first
item names it:

- to the child: ``("config", arguments)`` first; ``("head", key, GroupHead fields)``
  before the first span of a group; ``("spans", [(key, record or encoded span), ...])``;
  ``("flush", n)``;
- from the child: ``("flushed", n, ok)`` once everything sent before ``("flush", n)`` was
  exported (``ok``: every export since the last flush succeeded).
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from .otlp import GroupHead, SpanRecord

__all__ = ["ExportProcess", "ExportProcessGone", "main"]

_logger = logging.getLogger(__name__)

_LENGTH = struct.Struct("<I")
_MAX_FRAME = 1 << 30
_PIPE_SIZE = 1 << 20


class ExportProcessGone(Exception):
    """The export process is not running (it failed to start, crashed or was killed)."""


class ExportProcess:
    """The parent's end of one export process.

    Not thread-safe: the batch processor calls it under its export lock.

    :param arguments: the exporter's :attr:`~tether_otel.otlp.OTLPSpanExporter.arguments`.
    :raises ExportProcessGone: when the child cannot be started.
    """

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tether_otel.export_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
        except OSError as exc:
            raise ExportProcessGone(f"the export process did not start: {exc}") from exc
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin = self._process.stdin.fileno()
        _widen(self._stdin)
        os.set_blocking(self._stdin, False)  # writes wait in select, until a deadline
        self._stdout = self._process.stdout
        self._heads_sent = 0
        """The child has the heads of the groups numbered below this."""
        self._flushes = 0
        self._write(("config", dict(arguments)), time.monotonic() + 30)

    @property
    def pid(self) -> int:
        return self._process.pid

    def send(
        self,
        heads: Sequence[GroupHead],
        spans: list[tuple[int, bytes | SpanRecord]],
        deadline: float,
    ) -> None:
        """Send one batch to be exported as one request: ``(group, span)`` pairs, where a
        span is a :data:`~tether_otel.otlp.SpanRecord` or an encoded ``Span`` message and
        ``heads[group]`` is its group's head. ``heads`` holds every group's head and only
        grows; the child is sent those it has not had yet.

        :param deadline: a :func:`time.monotonic` time by which the child must have taken
            it (its pipe holds about a megabyte; a child that takes nothing until then is
            taken to be stuck).
        :raises ExportProcessGone: the child is not there to take it, or took none of
            it, or only part of it, by the deadline (it drops a part and is of no use
            after that: :meth:`close` it).
        :raises ValueError: a record holds a value :mod:`marshal` cannot carry (nothing
            was sent).
        """
        frame = _frame(("spans", spans))  # ValueError before anything is written
        for group in range(self._heads_sent, len(heads)):  # groups are only ever added
            self._write(("head", group, tuple(heads[group])), deadline)
            self._heads_sent = group + 1
        self._send(frame, deadline)

    def flush(self, timeout_s: float) -> bool:
        """Wait until the child has exported everything sent so far; ``False`` if it
        did not answer within ``timeout_s`` or an export failed."""
        self._flushes += 1
        number = self._flushes
        deadline = time.monotonic() + timeout_s
        self._write(("flush", number), deadline)
        while True:
            reply = self._read(deadline)
            if reply is None:
                return False
            if reply[0] == "flushed" and reply[1] == number:
                return bool(reply[2])

    def close(self, timeout_s: float) -> None:
        """Close the child's input, so that it exports what it has and exits; kill it if
        it has not exited within ``timeout_s``."""
        with contextlib.suppress(OSError):
            self._process.stdin.close()  # type: ignore[union-attr]
        try:
            self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _logger.warning(
                "The span export process did not finish within %.0f s; stopping it (the "
                "spans it still held are lost).",
                timeout_s,
            )
            self._process.kill()
            self._process.wait(timeout=5)
        self._stdout.close()

    def abandon(self) -> None:
        """Let go of a child this process inherited through ``fork`` (closing only this
        process's ends of its pipes: the parent that started it still owns it)."""
        for stream in (self._process.stdin, self._stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._process.returncode = 0  # never waited for here

    # -- frames ------------------------------------------------------------------------------
    def _write(self, message: Any, deadline: float) -> None:
        self._send(_frame(message), deadline)

    def _send(self, frame: bytes, deadline: float) -> None:
        try:
            sent = _write_all(self._stdin, frame, deadline)
        except (BrokenPipeError, OSError, ValueError) as exc:  # ValueError: closed file
            raise ExportProcessGone(f"the export process is gone ({exc})") from exc
        if sent < len(frame):
            raise ExportProcessGone(
                f"the export process took {sent} of {len(frame)} bytes in time (is it stuck?)"
            )

    def _read(self, deadline: float) -> Any:
        """The next frame from the child, or ``None`` at the deadline."""
        header = self._read_exactly(_LENGTH.size, deadline)
        if header is None:
            return None
        (length,) = _LENGTH.unpack(header)
        body = self._read_exactly(length, deadline)
        return None if body is None else marshal.loads(body)

    def _read_exactly(self, size: int, deadline: float) -> bytes | None:
        fd = self._stdout.fileno()
        data = b""
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, size - len(data))
            if not chunk:
                raise ExportProcessGone("the export process closed its output")
            data += chunk
        return data


def _widen(fd: int) -> None:
    """Let the pipe hold several batches (1 MiB where Linux allows it; 64 KiB is the
    usual default, about one batch), so that a writer does not wait for a child busy
    exporting the batch before."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux
    if set_size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, set_size, _PIPE_SIZE)


def _frame(message: Any) -> bytes:
    body = marshal.dumps(message)
    return _LENGTH.pack(len(body)) + body


def _write_all(fd: int, data: bytes, deadline: float) -> int:
    """Write ``data`` to the non-blocking ``fd``, waiting for room until ``deadline``;
    returns how many bytes were written (fewer than all at the deadline)."""
    view = memoryview(data)
    sent = 0
    while sent < len(data):
        try:
            sent += os.write(fd, view[sent:])
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                break
    return sent


def _read_frame(stream: BinaryIO) -> Any:
    """The next frame on ``stream``; ``None`` at its end."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    if length > _MAX_FRAME:
        raise ValueError(f"a frame of {length} bytes is not one this process writes")
    body = stream.read(length)
    if len(body) < length:
        return None
    return marshal.loads(body)


# -- the child -------------------------------------------------------------------------------
def _exporter(arguments: dict[str, Any]) -> Any:
    from .otlp import OTLPSpanExporter

    compression = arguments.pop("compression", None)
    if isinstance(compression, str):
        from opentelemetry.exporter.otlp.proto.http import Compression

        arguments["compression"] = Compression(compression)
    return OTLPSpanExporter(**arguments)


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Read frames from ``stdin`` and export their spans until it ends (the child's
    loop; see the module docs)."""
    from .otlp import EncodedBatch, Encoder, encode_queued

    first = _read_frame(stdin)
    if first is None:
        return
    if first[0] != "config":
        raise ValueError("the first frame must be the exporter's configuration")
    exporter = _exporter(first[1])
    encoder = Encoder()
    heads: dict[int, GroupHead] = {}
    ok = True
    try:
        while (frame := _read_frame(stdin)) is not None:
            tag = frame[0]
            if tag == "spans":
                spans = frame[1]
                try:
                    data = encode_queued(encoder, heads, spans)
                    result = exporter.export(EncodedBatch(data, len(spans)))
                    ok = ok and getattr(result, "name", "SUCCESS") == "SUCCESS"
                except Exception:  # the exporter reports its own failures
                    _logger.exception("Exporting %d spans failed.", len(spans))
                    ok = False
            elif tag == "head":
                heads[frame[1]] = GroupHead(*frame[2])
            elif tag == "flush":
                stdout.write(_frame(("flushed", frame[1], ok)))
                stdout.flush()
                ok = True
    finally:
        exporter.shutdown()


def main() -> None:
    """The export process: ``python -m tether_otel.export_process``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="tether-otel export process: %(message)s")
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
