"""Splitting documents into overlapping chunks on line boundaries.

A chunk never cuts a line, so a passage can always be cited as ``path:start-end``
and shown as the user wrote it. A chunk grows line by line until adding the next line
would pass ``max_chars`` (a single longer line becomes a chunk of its own, whole); the
next chunk starts ``overlap_lines`` lines before the previous one ended, so a sentence
split across the boundary is found in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Chunk", "Chunker"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice of a document: lines ``start_line``..``end_line`` (1-based, inclusive).

    ``score`` is set on search results: the BM25 score of a keyword search, the inner
    product of a vector search (``None`` elsewhere, and from backends that do not report
    scores). It takes no part in equality.
    """

    doc_id: str
    start_line: int
    end_line: int
    text: str
    score: float | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        """The identity used for de-duplication: (document, start line)."""
        return (self.doc_id, self.start_line)

    @property
    def reference(self) -> str:
        """``doc:start-end``, the citation form shown to users and the model."""
        if self.start_line == self.end_line:
            return f"{self.doc_id}:{self.start_line}"
        return f"{self.doc_id}:{self.start_line}-{self.end_line}"


class Chunker:
    """Splits text into :class:`Chunk` objects.

    :param max_chars: target upper bound of a chunk's length in characters.
    :param max_lines: upper bound of a chunk's length in lines.
    :param overlap_lines: lines shared by consecutive chunks; must be smaller than
        ``max_lines``.
    """

    def __init__(self, max_chars: int = 1500, max_lines: int = 60, overlap_lines: int = 3) -> None:
        if max_chars < 1 or max_lines < 1:
            raise ValueError("max_chars and max_lines must be positive.")
        if not 0 <= overlap_lines < max_lines:
            raise ValueError(
                f"overlap_lines must be between 0 and max_lines - 1 ({max_lines - 1}), "
                f"got {overlap_lines}."
            )
        self.max_chars = max_chars
        self.max_lines = max_lines
        self.overlap_lines = overlap_lines

    def split(self, doc_id: str, text: str) -> list[Chunk]:
        """The chunks of ``text``, in document order; blank-only chunks are skipped."""
        lines = text.splitlines()
        chunks: list[Chunk] = []
        start = 0
        while start < len(lines):
            end = start
            size = len(lines[start])
            while (
                end + 1 < len(lines)
                and end + 1 - start < self.max_lines
                and size + 1 + len(lines[end + 1]) <= self.max_chars
            ):
                end += 1
                size += 1 + len(lines[end])
            body = "\n".join(lines[start : end + 1])
            if body.strip():
                chunks.append(Chunk(doc_id, start + 1, end + 1, body))
            if end + 1 >= len(lines):
                break
            start = max(end + 1 - self.overlap_lines, start + 1)
        return chunks
