"""Deterministic top-k selection shared by the in-memory indexes."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["top_k"]


def top_k(scores: npt.NDArray[Any], keys: npt.NDArray[Any], limit: int) -> npt.NDArray[np.intp]:
    """Positions of the ``limit`` highest ``scores``, best first; equal scores are ordered
    by ascending ``keys``, so a ranking does not depend on memory layout (a reloaded
    index ranks exactly as the one that wrote it)."""
    if limit <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.intp)
    if scores.size > limit:
        kth = np.partition(scores, scores.size - limit)[scores.size - limit]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(scores.size)
    order = np.lexsort((keys[candidates], -scores[candidates]))[:limit]
    return candidates[order]
