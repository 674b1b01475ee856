"""Splitting documents into overlapping chunks on line boundaries.

A chunk never cuts a line, so a passage can always be cited as ``path:start-end``
and shown as the user wrote it. A chunk grows line by line until adding the next line
would pass ``max_chars`` (a single longer line becomes a chunk of its own, whole); the
next chunk starts ``overlap_lines`` lines before the previous one ended, so a sentence
split across the boundary is found in both.

A chunk cut from the middle of a document loses what its first lines would have told a
reader: which document it is and what it is about. Each chunk therefore carries a
:attr:`Chunk.context` — the document's path, its title (first Markdown heading, or a
short first line) and the heading of the section the chunk starts in, leaving out what
the chunk's own lines already hold. Backends index ``context`` together with the text
(:attr:`Chunk.indexed_text`) for keywords and vectors alike; the text a search returns
is the chunk's own lines, unchanged.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Chunk", "Chunker", "document_context"]

#: A Markdown ATX heading: ``#`` to ``######``, a space, the title.
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
#: A first line longer than this is prose, not a title.
_TITLE_MAX_CHARS = 300


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice of a document: lines ``start_line``..``end_line`` (1-based, inclusive).

    ``context`` is what the chunk is indexed with besides its text (see the module
    documentation); it is empty for chunks that need none. ``score`` is set on search
    results: the BM25 score of a keyword search, the inner product of a vector search
    (``None`` elsewhere, and from backends that do not report scores). Neither takes
    part in equality.
    """

    doc_id: str
    start_line: int
    end_line: int
    text: str
    score: float | None = field(default=None, compare=False)
    context: str = field(default="", compare=False)

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

    @property
    def indexed_text(self) -> str:
        """What backends tokenize and embedders embed: the context, then the text."""
        return f"{self.context}\n{self.text}" if self.context else self.text


class Chunker:
    """Splits text into :class:`Chunk` objects.

    :param max_chars: target upper bound of a chunk's length in characters.
    :param max_lines: upper bound of a chunk's length in lines.
    :param overlap_lines: lines shared by consecutive chunks; must be smaller than
        ``max_lines``.
    :param context: give each chunk its document's context (path, title, section
        heading); see :func:`document_context`.
    """

    #: Bumped when the chunks of a given text change (it is part of the content hash, so
    #: documents indexed by an older version are re-indexed when added again).
    version = 2

    def __init__(
        self,
        max_chars: int = 1500,
        max_lines: int = 60,
        overlap_lines: int = 3,
        *,
        context: bool = True,
    ) -> None:
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
        self.context = context

    @property
    def signature(self) -> str:
        """Identifies the chunking: equal signatures split equal texts equally."""
        context = "ctx" if self.context else "plain"
        return f"v{self.version}/{self.max_chars}/{self.max_lines}/{self.overlap_lines}/{context}"

    def split(self, doc_id: str, text: str) -> list[Chunk]:
        """The chunks of ``text``, in document order; blank-only chunks are skipped."""
        lines = text.splitlines()
        chunks: list[Chunk] = []
        headings = _Headings(lines, doc_id) if self.context else None
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
                context = headings.context(start) if headings is not None else ""
                chunks.append(Chunk(doc_id, start + 1, end + 1, body, context=context))
            if end + 1 >= len(lines):
                break
            start = max(end + 1 - self.overlap_lines, start + 1)
        return chunks


def document_context(doc_id: str, lines: Sequence[str], start: int) -> str:
    """The context of a chunk starting at 0-based line ``start`` of ``lines``.

    One line each, in this order, leaving out any that the chunk's first line already is:
    ``doc_id`` (the path or name the document was added under, unless it has no
    letters: a number or key says nothing of the content), the title (the first
    Markdown heading, or else the first non-blank line when it is short enough to be a
    title) and the nearest Markdown heading above ``start`` (the section).
    """
    return _Headings(lines, doc_id).context(start)


class _Headings:
    """Where a document's title and section headings are, found once per document."""

    def __init__(self, lines: Sequence[str], doc_id: str) -> None:
        self.lines = lines
        # A name without letters (a database key, a number) tells a reader nothing.
        self.name = [doc_id] if any(ch.isalpha() for ch in doc_id) else []
        self.sections: list[int] = []  # 0-based line numbers of Markdown headings
        for number, line in enumerate(lines):
            if line.lstrip().startswith("#") and _HEADING.match(line):
                self.sections.append(number)
        self.title: int | None = self.sections[0] if self.sections else None
        if self.title is None:
            first = next((n for n, line in enumerate(lines) if line.strip()), None)
            if first is not None and len(lines[first].strip()) <= _TITLE_MAX_CHARS:
                self.title = first

    def context(self, start: int) -> str:
        parts = self.name.copy()
        if self.title is not None and self.title < start:
            parts.append(self._text(self.title))
        section = self._section_before(start)
        if section is not None and section != self.title and section < start:
            parts.append(self._text(section))
        return "\n".join(parts)

    def _section_before(self, start: int) -> int | None:
        index = bisect_right(self.sections, start) - 1
        return self.sections[index] if index >= 0 else None

    def _text(self, number: int) -> str:
        line = self.lines[number]
        match = _HEADING.match(line)
        return match.group(2) if match else line.strip()
