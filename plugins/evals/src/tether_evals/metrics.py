"""Ranking metrics with binary relevance, as BEIR and TREC compute them.

tether's knowledge engine returns rankings but does not score them, so the formulas are
here: ``nDCG@k = DCG@k / IDCG@k`` with ``DCG@k = sum(rel_i / log2(i + 1))`` over ranks
``i = 1..k`` and ``IDCG@k`` the DCG of an ideal ranking (every relevant document first);
``Recall@k`` is the share of relevant documents in the first ``k``. A document counted
once (its best rank) whatever its number of passages.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

__all__ = ["dedupe", "ndcg_at", "recall_at"]


def dedupe(ranked: Sequence[str]) -> list[str]:
    """``ranked`` with repeats removed, each id at its first (best) rank."""
    return list(dict.fromkeys(ranked))


def ndcg_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """nDCG@k of ``ranked`` ids against the ``relevant`` set (0.0 when none is relevant)."""
    if not relevant or k < 1:
        return 0.0
    gains = sum(
        1.0 / math.log2(rank + 2) for rank, doc in enumerate(dedupe(ranked)[:k]) if doc in relevant
    )
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return gains / ideal


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """The share of ``relevant`` ids among the first ``k`` of ``ranked``."""
    if not relevant:
        return 0.0
    return len(set(dedupe(ranked)[:k]) & set(relevant)) / len(relevant)
