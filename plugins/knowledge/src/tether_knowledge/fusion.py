"""Fusion of keyword and vector rankings: weighted reciprocal rank fusion, or a convex
combination of normalised scores.

``"rrf"`` (the default): each ranking contributes ``weight / (k + rank)`` (rank
1-based) to every chunk it contains. Scores from BM25 and from cosine similarity are not
comparable, ranks are, which is why RRF needs no calibration.

``"convex"``: each ranking's scores (:attr:`Chunk.score`) are min-max normalised over
the ranking (its best chunk 1, its last 0) and a chunk's fused score is
``keyword_weight * keyword + vector_weight * vector`` (0 for a ranking it is missing
from). Unlike RRF it keeps how far apart the scores are, not only their order; on BEIR
SciFact it ranks better than RRF tuned on the same data (see the knowledge-base docs). A
ranking whose chunks carry no scores is normalised by rank instead.

Either way a chunk's fused score is the sum over rankings. Chunks are identified by
(document, start line): when a ranking holds the same key twice (say, a document indexed
twice), only its best rank counts and the duplicate takes no rank from the chunks after
it. Results under ``min_score`` are dropped and the best ``k`` returned, highest score
first; ties keep keyword order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .chunking import Chunk

__all__ = ["FusionMethod", "Passage", "fuse"]

FusionMethod = Literal["rrf", "convex"]


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
    method: FusionMethod = "rrf",
) -> list[Passage]:
    """Fuse two rankings (best first) into the top ``k`` passages.

    :param rrf_k: the RRF constant; larger values flatten the advantage of top ranks
        (``"rrf"`` only).
    :param min_score: fused scores below this are dropped (``0`` keeps everything).
    :param method: ``"rrf"`` or ``"convex"`` (see the module documentation).
    """
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be non-negative, got {rrf_k}.")
    if method not in ("rrf", "convex"):
        raise ValueError(f'method must be "rrf" or "convex", not {method!r}.')
    scores: dict[tuple[str, int], float] = {}
    chunks: dict[tuple[str, int], Chunk] = {}
    ranks: dict[tuple[str, int], list[int | None]] = {}
    for position, (ranking, weight) in enumerate(
        ((keyword, keyword_weight), (vector, vector_weight))
    ):
        unique: dict[tuple[str, int], Chunk] = {}
        for chunk in ranking:
            unique.setdefault(chunk.key, chunk)
        normalised = _normalised(list(unique.values())) if method == "convex" else None
        for rank, (key, chunk) in enumerate(unique.items(), start=1):
            if normalised is None:
                scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            else:
                scores[key] = scores.get(key, 0.0) + weight * normalised[rank - 1]
            chunks.setdefault(key, chunk)
            ranks.setdefault(key, [None, None])[position] = rank
    return _top_passages(scores, chunks, ranks, k=k, min_score=min_score, keyword_only=keyword_only)


def _top_passages(
    scores: dict[tuple[str, int], float],
    chunks: dict[tuple[str, int], Chunk],
    ranks: dict[tuple[str, int], list[int | None]],
    *,
    k: int,
    min_score: float,
    keyword_only: bool,
) -> list[Passage]:
    """The best ``k`` passages scoring at least ``min_score``, best first."""
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


def _normalised(ranking: Sequence[Chunk]) -> list[float]:
    """Min-max normalised scores of a ranking (best 1, last 0; all 1 when they are
    equal); by rank when the backend gave no scores."""
    values = [chunk.score for chunk in ranking]
    if not values:
        return []
    if any(value is None for value in values):
        n = len(ranking)
        return [1.0 - i / (n - 1) if n > 1 else 1.0 for i in range(n)]
    present = [float(value) for value in values if value is not None]
    high, low = max(present), min(present)
    if high <= low:
        return [1.0] * len(present)
    return [(value - low) / (high - low) for value in present]
