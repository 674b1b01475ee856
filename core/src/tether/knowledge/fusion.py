"""Weighted reciprocal rank fusion of keyword and vector rankings.

Each ranking contributes ``weight / (k + rank)`` (rank 1-based) to every chunk it
contains; a chunk's fused score is the sum over rankings. Scores from BM25 and from
cosine similarity are not comparable, ranks are, which is why RRF needs no calibration.
Chunks are identified by (document, start line): when a ranking holds the same key twice
(say, a document indexed twice), only its best rank counts and the duplicate takes no
rank from the chunks after it. Results under ``min_score``
are dropped and the best ``k`` returned, highest score first; ties keep keyword order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .chunking import Chunk

__all__ = ["Passage", "fuse"]


@dataclass(frozen=True, slots=True)
class Passage:
    """A search result: a chunk with its fused score and where it ranked in each list.

    ``keyword_rank`` / ``vector_rank`` are 1-based, ``None`` when the chunk was not in
    that list. ``keyword_only`` is true when no embedder took part in the search.
    """

    doc_id: str
    start_line: int
    end_line: int
    text: str
    score: float
    keyword_rank: int | None = None
    vector_rank: int | None = None
    keyword_only: bool = False

    @property
    def reference(self) -> str:
        """``doc:start-end``, the citation form."""
        return Chunk(self.doc_id, self.start_line, self.end_line, "").reference


def fuse(
    keyword: Sequence[Chunk],
    vector: Sequence[Chunk],
    *,
    k: int = 10,
    rrf_k: float = 60.0,
    keyword_weight: float = 1.0,
    vector_weight: float = 1.0,
    min_score: float = 0.0,
    keyword_only: bool = False,
) -> list[Passage]:
    """Fuse two rankings (best first) into the top ``k`` passages.

    :param rrf_k: the RRF constant; larger values flatten the advantage of top ranks.
    :param min_score: fused scores below this are dropped (``0`` keeps everything).
    """
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be non-negative, got {rrf_k}.")
    scores: dict[tuple[str, int], float] = {}
    chunks: dict[tuple[str, int], Chunk] = {}
    ranks: dict[tuple[str, int], list[int | None]] = {}
    for position, (ranking, weight) in enumerate(
        ((keyword, keyword_weight), (vector, vector_weight))
    ):
        seen: set[tuple[str, int]] = set()
        for chunk in ranking:
            key = chunk.key
            if key in seen:
                continue
            seen.add(key)
            rank = len(seen)
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            chunks.setdefault(key, chunk)
            ranks.setdefault(key, [None, None])[position] = rank
    order = sorted(scores, key=lambda key: -scores[key])
    passages: list[Passage] = []
    for key in order:
        if scores[key] < min_score:
            break
        chunk = chunks[key]
        keyword_rank, vector_rank = ranks[key]
        passages.append(
            Passage(
                chunk.doc_id,
                chunk.start_line,
                chunk.end_line,
                chunk.text,
                scores[key],
                keyword_rank,
                vector_rank,
                keyword_only,
            )
        )
        if len(passages) == k:
            break
    return passages
