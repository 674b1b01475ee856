"""Shared helpers for the cross-package tests."""

from __future__ import annotations

import queue
import threading
from typing import IO

import pytest


class LineReader:
    """Reads a subprocess pipe line by line on a thread, so the test can wait for a line
    without racing the pipe's buffering; fails if nothing matching arrives in a minute."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in iter(stream.readline, ""):
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, marker: str) -> None:
        while True:
            line = self.lines.get(timeout=60)
            assert line is not None, f"the process ended before printing {marker!r}: {self.seen}"
            self.seen.append(line)
            if marker in line:
                return

    def rest(self) -> str:
        """Everything after the lines already seen, up to the end of the stream."""
        tail = []
        while (line := self.lines.get(timeout=60)) is not None:
            tail.append(line)
        return "".join(tail)


@pytest.fixture
def line_reader() -> type[LineReader]:
    """:class:`LineReader`, for tests that watch a subprocess's output as it arrives."""
    return LineReader
