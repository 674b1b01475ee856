"""A stdio MCP server's stderr, written to its log file with a size cap.

The server process writes its stderr to a pipe; a daemon thread copies what arrives to
``NAME.log`` through the standard library's :class:`logging.handlers.RotatingFileHandler`:
when the file would pass ``max_bytes`` it is renamed to ``NAME.log.1`` (replacing the
previous one) and a new ``NAME.log`` starts. A server that writes without end therefore
keeps at most about twice ``max_bytes`` on disk. The copy ends when the server and
tether have both closed the pipe.
"""

from __future__ import annotations

import codecs
import logging
import logging.handlers
import os
import threading
from pathlib import Path
from typing import TextIO

__all__ = ["CappedLog"]

_READ = 65536
_PIECE = 1024


class CappedLog:
    """The pipe a server's stderr goes to (:attr:`writer`, handed to the SDK as its
    ``errlog``) and the thread that copies it into the capped, rotated log file."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self._handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=1, encoding="utf-8"
        )
        self._handler.terminator = ""
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")
        self._thread = threading.Thread(
            target=self._copy, args=(read_fd,), name=f"tether-mcp-log {path.name}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Close tether's end of the pipe; the copy ends once the server's end closes."""
        self.writer.close()

    def _copy(self, read_fd: int) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while chunk := os.read(read_fd, _READ):
                self._write(decoder.decode(chunk))
            self._write(decoder.decode(b"", final=True))
        except OSError:
            pass
        finally:
            os.close(read_fd)
            self._handler.close()

    def _write(self, text: str) -> None:
        # In small pieces, so the handler's size check before each write keeps the file
        # within its cap rather than one read past it.
        for start in range(0, len(text), _PIECE):
            piece = text[start : start + _PIECE]
            self._handler.handle(logging.makeLogRecord({"msg": piece, "args": None}))
