"""Turning fused chunks into the passages a reader (or a model) is shown.

Chunks overlap by design and a long answer spans several of them, so a raw ranking
often holds neighbours from one document: ``notes.md:1-40`` and ``notes.md:38-70``
are one piece of evidence, not two. :func:`merge_passages` joins chunks of a document
whose line ranges overlap or touch into one passage (ranked where its best chunk
ranked) and keeps at most ``max_per_document`` passages of any document, so the ``k``
results of a search are ``k`` different pieces of evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .fusion import Passage

__all__ = ["merge_passages"]


def merge_passages(
    passages: Sequence[Passage], *, max_per_document: int | None = None
) -> list[Passage]:
    """``passages`` (best first) with neighbours merged and each document capped.

    Two passages of one document are merged when their line ranges overlap or touch
    (``b.start_line <= a.end_line + 1``), transitively. A merged passage takes the
    best score and the best rank in each ranking of its parts, and its text is the
    union of their lines. The result is best first; ``max_per_document=None`` keeps
    every passage.
    """
    if max_per_document is not None and max_per_document < 1:
        raise ValueError(f"max_per_document must be at least 1, got {max_per_document}.")
    groups: dict[str, list[Passage]] = {}
    for passage in passages:
        groups.setdefault(passage.doc_id, []).append(passage)
    merged: list[Passage] = []
    for group in groups.values():
        merged.extend(_merge_document(group))
    merged.sort(key=lambda p: -p.score)
    if max_per_document is None:
        return merged
    kept: list[Passage] = []
    count: dict[str, int] = {}
    for passage in merged:
        seen = count.get(passage.doc_id, 0)
        if seen < max_per_document:
            count[passage.doc_id] = seen + 1
            kept.append(passage)
    return kept


def _merge_document(group: list[Passage]) -> list[Passage]:
    """Merge the passages of one document whose line ranges overlap or touch."""
    if len(group) == 1:
        return group
    ordered = sorted(group, key=lambda p: (p.start_line, p.end_line))
    out: list[Passage] = [ordered[0]]
    for passage in ordered[1:]:
        last = out[-1]
        if passage.start_line <= last.end_line + 1:
            out[-1] = _join(last, passage)
        else:
            out.append(passage)
    return out


def _join(first: Passage, second: Passage) -> Passage:
    """One passage covering ``first`` and ``second`` (``second`` starts no earlier)."""
    text = first.text
    if second.end_line > first.end_line:
        new_lines = second.text.split("\n")[first.end_line + 1 - second.start_line :]
        text = "\n".join([first.text, *new_lines])
    return replace(
        first,
        end_line=max(first.end_line, second.end_line),
        text=text,
        score=max(first.score, second.score),
        keyword_rank=_best(first.keyword_rank, second.keyword_rank),
        vector_rank=_best(first.vector_rank, second.vector_rank),
    )


def _best(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
