"""Nearest-neighbour search over unit vectors in numpy memory, updated incrementally.

Small indexes are searched exactly (one matrix-vector product). Past
``exact_limit`` vectors a brute-force product costs more than the latency budget (a
100k x 384 float32 matrix is 150 MB, read whole per query), so the search runs in two
stages: every vector also has a 1-bit-per-dimension sign code, the query's code is
compared with all of them by Hamming distance (a few MB, popcounts), and the
``candidates`` nearest by code are re-scored exactly. This is the "binary quantisation
with rescoring" of vector databases; with real embeddings it keeps nearly all of the
exact top results (the benchmark reports the overlap). The popcount needs numpy 2;
with numpy 1.x every search is exact.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .ranking import top_k

__all__ = ["VectorIndex"]

_F32 = npt.NDArray[np.float32]


class VectorIndex:
    """Inner-product search over vectors identified by integer slots.

    :param exact_limit: up to this many stored vectors, search exactly.
    :param candidates: how many code-nearest vectors are re-scored per query beyond
        ``exact_limit`` (at least ``10 x limit``).
    """

    def __init__(self, exact_limit: int = 20_000, candidates: int = 2000) -> None:
        self.exact_limit = exact_limit
        self.candidates = candidates
        self.dimensions: int | None = None
        self._lock = threading.RLock()
        self._matrix: _F32 = np.zeros((0, 0), dtype=np.float32)
        self._codes: npt.NDArray[np.uint64] = np.zeros((0, 0), dtype=np.uint64)
        self._alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._slots: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._pos_of: dict[int, int] = {}
        self._size = 0
        self._dead = 0

    def __len__(self) -> int:
        return self._size - self._dead

    def add_many(self, slots: Sequence[int], vectors: npt.ArrayLike) -> None:
        """Store ``vectors`` (rows, unit length) under ``slots``, replacing existing ones."""
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(slots):
            raise ValueError("add_many needs one vector (row) per slot.")
        if matrix.shape[0] == 0:
            return
        with self._lock:
            if self.dimensions is None:
                self.dimensions = int(matrix.shape[1])
            if matrix.shape[1] != self.dimensions:
                raise ValueError(
                    f"Vectors of {matrix.shape[1]} dimensions given to an index of "
                    f"{self.dimensions}; all vectors must come from the same embedder."
                )
            if self._pos_of and not self._pos_of.keys().isdisjoint(map(int, slots)):
                for slot in slots:
                    self.remove(slot)
            self._reserve(self._size + len(slots))
            start, end = self._size, self._size + len(slots)
            self._matrix[start:end] = matrix
            self._codes[:, start:end] = _codes(matrix).T
            self._alive[start:end] = True
            self._slots[start:end] = slots
            self._pos_of.update(zip(map(int, slots), range(start, end), strict=True))
            self._size = end

    def remove(self, slot: int) -> bool:
        """Forget the vector of ``slot``; ``False`` if there was none."""
        with self._lock:
            pos = self._pos_of.pop(int(slot), None)
            if pos is None:
                return False
            self._alive[pos] = False
            self._dead += 1
            if self._dead > max(1000, self._size // 4):
                self._compact()
            return True

    def search(self, query: npt.ArrayLike, limit: int) -> list[tuple[int, float]]:
        """``(slot, inner product)`` of the ``limit`` nearest vectors, best first."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._lock:
            if limit <= 0 or len(self) == 0:
                return []
            if q.shape[0] != self.dimensions:
                raise ValueError(
                    f"Query vector has {q.shape[0]} dimensions, the index {self.dimensions}; "
                    f"query with the embedder the documents were indexed with."
                )
            n = self._size
            if len(self) <= self.exact_limit or not hasattr(np, "bitwise_count"):
                positions = np.arange(n)
                scores = _dot(self._matrix[:n], q)
            else:
                positions = self._code_candidates(q, max(self.candidates, 10 * limit))
                scores = _dot(self._matrix[positions], q)
            if self._dead:
                scores = np.where(self._alive[positions], scores, -np.inf)
            best = top_k(scores, self._slots[positions], min(limit, len(self)))
            best = best[np.isfinite(scores[best])]
            return [(int(self._slots[positions[i]]), float(scores[i])) for i in best.tolist()]

    def _code_candidates(self, q: _F32, count: int) -> npt.NDArray[np.intp]:
        n = self._size
        query_code = _codes(q.reshape(1, -1))[0]
        distance = np.bitwise_count(self._codes[0, :n] ^ query_code[0]).astype(np.uint16)
        for word in range(1, self._codes.shape[0]):
            distance += np.bitwise_count(self._codes[word, :n] ^ query_code[word])
        if self._dead:
            distance[~self._alive[:n]] = np.iinfo(np.uint16).max
        if count >= n:
            return np.arange(n)
        histogram = np.bincount(distance, minlength=int(distance.max()) + 1)
        cutoff = int(np.searchsorted(np.cumsum(histogram), count))
        # Everything closer than the cutoff distance, then as many at the cutoff as fit:
        # exactly ``count`` rows to gather, however crowded the cutoff bucket is.
        closer = np.flatnonzero(distance < cutoff)
        at_cutoff = np.flatnonzero(distance == cutoff)[: count - closer.size]
        return np.concatenate([closer, at_cutoff])

    def _reserve(self, size: int) -> None:
        capacity = self._matrix.shape[0]
        if size <= capacity:
            return
        capacity = max(size, 2 * capacity, 1024)
        assert self.dimensions is not None
        words = (self.dimensions + 63) // 64
        matrix = np.zeros((capacity, self.dimensions), dtype=np.float32)
        codes = np.zeros((words, capacity), dtype=np.uint64)
        alive = np.zeros(capacity, dtype=np.bool_)
        slots = np.zeros(capacity, dtype=np.int64)
        n = self._size
        if n:
            matrix[:n] = self._matrix[:n]
            codes[:, :n] = self._codes[:, :n]
            alive[:n] = self._alive[:n]
            slots[:n] = self._slots[:n]
        self._matrix, self._codes, self._alive, self._slots = matrix, codes, alive, slots

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._size])
        count = keep.size
        self._matrix[:count] = self._matrix[keep]
        self._codes[:, :count] = self._codes[:, keep]
        self._slots[:count] = self._slots[keep]
        self._alive[:count] = True
        self._alive[count:] = False
        self._size = count
        self._dead = 0
        self._pos_of = {int(s): p for p, s in enumerate(self._slots[:count].tolist())}


def _dot(matrix: _F32, q: _F32) -> _F32:
    """``matrix @ q`` without BLAS: a threaded BLAS matrix-vector product of a few
    thousand rows spends milliseconds waking threads (far more than the arithmetic, and
    more again when the cores are busy); numpy's own single-threaded SIMD loop does not."""
    result: _F32 = np.einsum("ij,j->i", matrix, q)
    return result


def _codes(matrix: Any) -> npt.NDArray[np.uint64]:
    """Sign bits of each row, packed into 64-bit words (rows x words)."""
    bits = np.packbits(np.asarray(matrix) > 0, axis=1)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits).view(np.uint64)
