"""A BM25 inverted index in numpy memory, updated incrementally.

Used by the persistent backends as their query-time keyword index: the backend keeps
the durable copy (each chunk's term ids and counts) and loads it here once, so a query
costs a few vectorised operations over the postings of its terms (about a millisecond
at 100k chunks) instead of a full scan.

Layout: a compressed "main" inverted index (postings sorted by term) plus a small
"delta" of chunks added since it was built. Removals flip an alive bit; document
frequencies then count only live chunks, so scores are exactly those of an index built
from the live chunks alone. The main index is rebuilt, folding in the delta and dropping
removed chunks, when the delta or the removed share grows past a fraction of it.

Scoring is Okapi BM25 with Lucene's non-negative idf,
``ln(1 + (N - df + 0.5) / (df + 0.5))``; a query term repeated counts repeatedly.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .ranking import top_k
from .text import TEXT_BREAK

if TYPE_CHECKING:
    from .text import Tokenizer

__all__ = ["KeywordIndex"]

_IntArray = npt.NDArray[np.int64]
#: Distinct words remembered by :meth:`KeywordIndex.encode_text` before it starts over.
_WORD_MEMO_LIMIT = 1_000_000
#: Marks a word not in the memo yet (stop words are -1, terms 0 and up).
_UNKNOWN = -2
#: The memo's id of the break between two texts of a batch.
_BREAK = -3
_FloatArray = npt.NDArray[np.float32]


class KeywordIndex:
    """BM25 over integer-identified chunks ("slots").

    :param k1: term-frequency saturation.
    :param b: length normalisation.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.vocabulary: dict[str, int] = {}
        self._word_ids: dict[str, int] = {TEXT_BREAK: _BREAK}
        self._memo_owner: Tokenizer | None = None
        #: terms by id (``terms[vocabulary[t]] == t``)
        self.terms: list[str] = []
        self._lock = threading.RLock()
        self._pos_of: dict[int, int] = {}
        self._slots: list[int] = []
        self._lengths: list[float] = []
        self._alive: list[bool] = []
        self._terms: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = []
        self._n_alive = 0
        self._total_length = 0.0
        self._dead = 0
        # main index (built by _rebuild) and the delta added since
        self._main_upto = 0
        self._ptr: _IntArray = np.zeros(1, dtype=np.int64)
        self._post_pos: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._post_tf: _FloatArray = np.zeros(0, dtype=np.float32)
        self._delta: dict[int, tuple[list[int], list[float]]] = {}
        self._arrays: tuple[_FloatArray, npt.NDArray[np.bool_], _IntArray] | None = None
        self._stale = False

    def __len__(self) -> int:
        return self._n_alive

    # -- building -------------------------------------------------------------------
    def encode(self, terms: Iterable[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Term ids (new terms get new ids) and counts of a chunk's terms."""
        counts = Counter(terms)
        vocabulary = self.vocabulary
        try:
            ids = list(map(vocabulary.__getitem__, counts))
        except KeyError:
            for term in counts:
                if term not in vocabulary:
                    vocabulary[term] = len(vocabulary)
                    self.terms.append(term)
            ids = list(map(vocabulary.__getitem__, counts))
        return (
            np.array(ids, dtype=np.int64),
            np.fromiter(counts.values(), dtype=np.float32, count=len(counts)),
        )

    def encode_texts(
        self, texts: Sequence[str], tokenizer: Tokenizer
    ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        """:meth:`encode` of ``tokenizer(text)`` for each of ``texts``, vectorised."""
        term_ids, tfs, bounds = self.encode_batch(texts, tokenizer)
        return [
            (term_ids[bounds[i] : bounds[i + 1]], tfs[bounds[i] : bounds[i + 1]])
            for i in range(len(texts))
        ]

    def encode_batch(
        self, texts: Sequence[str], tokenizer: Tokenizer
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """:meth:`encode_texts` as three flat arrays: the term ids and counts of all
        texts, text ``i`` holding ``ids[bounds[i]:bounds[i + 1]]`` (ids ascending).

        The batch is split into words in one pass (:meth:`Tokenizer.batch_words`), words
        are mapped straight to term ids through a memo of this index (a stop word to -1),
        so a word seen before costs one lookup, and the counting of the whole batch is
        one numpy sort. One index is used with one tokenizer; passing another starts the
        memo over.
        """
        if tokenizer is not self._memo_owner:
            self._word_ids = {TEXT_BREAK: _BREAK}
            self._memo_owner = tokenizer
        words = tokenizer.batch_words(texts)
        if words is None:  # a text holds the break character: one text at a time
            per_text = (chain(tokenizer.words(t), (TEXT_BREAK,)) for t in texts)
            words = list(chain.from_iterable(per_text))[:-1]
        word_ids = self._word_ids
        ids = np.fromiter(
            map(word_ids.get, words, repeat(_UNKNOWN)), dtype=np.int64, count=len(words)
        )
        unknown = np.flatnonzero(ids == _UNKNOWN)
        if unknown.size:
            missing = [words[i] for i in unknown.tolist()]
            self._learn_words(missing, tokenizer)
            ids[unknown] = np.fromiter(
                map(word_ids.__getitem__, missing), dtype=np.int64, count=len(missing)
            )
        owner = np.cumsum(ids == _BREAK)
        kept = ids >= 0
        width = len(self.terms) + 1
        keys, counts = np.unique(owner[kept] * width + ids[kept], return_counts=True)
        bounds = np.searchsorted(keys // width, np.arange(len(texts) + 1))
        return keys % width, counts.astype(np.float32), bounds.astype(np.int64)

    def _learn_words(self, words: list[str], tokenizer: Tokenizer) -> None:
        """Give the words not yet in the memo their term ids (new terms get new ids)."""
        word_ids = self._word_ids
        if len(word_ids) > _WORD_MEMO_LIMIT:
            word_ids.clear()
            word_ids[TEXT_BREAK] = _BREAK
        vocabulary = self.vocabulary
        for word, term in tokenizer.term_map(set(words).difference(word_ids)).items():
            if not term:
                word_ids[word] = -1
                continue
            term_id = vocabulary.get(term)
            if term_id is None:
                term_id = vocabulary[term] = len(vocabulary)
                self.terms.append(term)
            word_ids[word] = term_id

    def load_vocabulary(self, terms: Sequence[str]) -> None:
        """Start from a stored vocabulary: ``terms[i]`` has id ``i``."""
        with self._lock:
            if self.terms:
                raise RuntimeError("load_vocabulary must be called on an empty index.")
            self.terms = list(terms)
            self.vocabulary = {term: i for i, term in enumerate(self.terms)}
            self._word_ids = {TEXT_BREAK: _BREAK}

    def add(self, slot: int, term_ids: npt.NDArray[Any], counts: npt.NDArray[Any]) -> None:
        """Index chunk ``slot`` (replacing it if present) with its terms' ids and counts."""
        with self._lock:
            if slot in self._pos_of:
                self.remove(slot)
            ids = np.asarray(term_ids, dtype=np.int64)
            tfs = np.asarray(counts, dtype=np.float32)
            pos = len(self._slots)
            self._pos_of[slot] = pos
            self._slots.append(slot)
            length = float(tfs.sum())
            self._lengths.append(length)
            self._alive.append(True)
            self._terms.append((ids, tfs))
            self._n_alive += 1
            self._total_length += length
            for term_id, tf in zip(ids.tolist(), tfs.tolist(), strict=True):
                entry = self._delta.get(term_id)
                if entry is None:
                    entry = self._delta[term_id] = ([], [])
                entry[0].append(pos)
                entry[1].append(tf)
            self._arrays = None

    def add_many(
        self,
        slots: Sequence[int],
        encoded: Sequence[tuple[npt.NDArray[Any], npt.NDArray[Any]]],
    ) -> None:
        """Index many new chunks at once (loading a stored index); much faster than
        :meth:`add` in a loop, as postings are sorted once, at the next search."""
        if len(slots) != len(encoded):
            raise ValueError(f"{len(slots)} slots but {len(encoded)} encoded chunks.")
        terms = [
            (np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=np.float32))
            for ids, tfs in encoded
        ]
        lengths = _sums([tfs for _, tfs in terms])
        with self._lock:
            if self._pos_of and not self._pos_of.keys().isdisjoint(slots):
                for slot in slots:
                    self.remove(slot)
            start = len(self._slots)
            self._pos_of.update(zip(slots, range(start, start + len(slots)), strict=True))
            self._slots.extend(slots)
            self._lengths.extend(lengths)
            self._alive.extend([True] * len(slots))
            self._terms.extend(terms)
            self._n_alive += len(slots)
            self._total_length += float(sum(lengths))
            self._stale = True
            self._arrays = None

    def remove(self, slot: int) -> bool:
        """Forget chunk ``slot``; ``False`` if it was not indexed."""
        with self._lock:
            pos = self._pos_of.pop(slot, None)
            if pos is None:
                return False
            self._alive[pos] = False
            self._n_alive -= 1
            self._total_length -= self._lengths[pos]
            self._dead += 1
            self._arrays = None
            return True

    # -- querying -------------------------------------------------------------------
    def search(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """``(slot, score)`` of the best ``limit`` chunks containing any of ``terms``."""
        with self._lock:
            ids = [self.vocabulary[t] for t in terms if t in self.vocabulary]
            if not ids or self._n_alive == 0 or limit <= 0:
                return []
            self._maybe_rebuild()
            lengths, alive, slot_array = self._current_arrays()
            n = len(self._slots)
            avg = self._total_length / self._n_alive if self._n_alive else 1.0
            norm = self.k1 * (1.0 - self.b + self.b * lengths / max(avg, 1e-9))
            scores = np.zeros(n, dtype=np.float32)
            query_counts: dict[int, int] = {}
            for term_id in ids:
                query_counts[term_id] = query_counts.get(term_id, 0) + 1
            for term_id, repeats in query_counts.items():
                pos, tf = self._postings(term_id)
                if pos.size == 0:
                    continue
                live = alive[pos] if self._dead else None
                df = int(live.sum()) if live is not None else int(pos.size)
                if df == 0:
                    continue
                idf = np.log1p((self._n_alive - df + 0.5) / (df + 0.5))
                contribution = (idf * repeats) * tf * (self.k1 + 1.0) / (tf + norm[pos])
                if live is not None:
                    contribution = contribution * live
                scores[pos] += contribution.astype(np.float32, copy=False)
            hits = np.flatnonzero(scores)
            best = hits[top_k(scores[hits], slot_array[hits], limit)]
            return [(self._slots[p], float(scores[p])) for p in best.tolist()]

    def _postings(self, term_id: int) -> tuple[npt.NDArray[np.int32], _FloatArray]:
        if term_id + 1 < len(self._ptr):
            start, end = int(self._ptr[term_id]), int(self._ptr[term_id + 1])
            pos, tf = self._post_pos[start:end], self._post_tf[start:end]
        else:
            pos, tf = self._post_pos[:0], self._post_tf[:0]
        extra = self._delta.get(term_id)
        if extra:
            pos = np.concatenate([pos, np.asarray(extra[0], dtype=np.int32)])
            tf = np.concatenate([tf, np.asarray(extra[1], dtype=np.float32)])
        return pos, tf

    def _current_arrays(self) -> tuple[_FloatArray, npt.NDArray[np.bool_], _IntArray]:
        if self._arrays is None:
            self._arrays = (
                np.asarray(self._lengths, dtype=np.float32),
                np.asarray(self._alive, dtype=np.bool_),
                np.asarray(self._slots, dtype=np.int64),
            )
        return self._arrays

    def _maybe_rebuild(self) -> None:
        pending = len(self._slots) - self._main_upto
        main = max(self._main_upto, 1)
        if (
            self._stale
            or pending > max(2000, main // 10)
            or self._dead > max(1000, len(self._slots) // 4)
        ):
            self._rebuild()

    def _rebuild(self) -> None:
        """Fold the delta into the main index and drop removed chunks."""
        if self._dead:  # nothing to drop otherwise: positions stay as they are
            keep = [p for p, a in enumerate(self._alive) if a]
            self._slots = [self._slots[p] for p in keep]
            self._lengths = [self._lengths[p] for p in keep]
            self._terms = [self._terms[p] for p in keep]
            self._alive = [True] * len(keep)
            self._pos_of = {slot: pos for pos, slot in enumerate(self._slots)}
            self._dead = 0
        self._stale = False
        self._delta = {}
        self._arrays = None
        self._main_upto = len(self._slots)
        if not self._terms:
            self._ptr = np.zeros(1, dtype=np.int64)
            self._post_pos = np.zeros(0, dtype=np.int32)
            self._post_tf = np.zeros(0, dtype=np.float32)
            return
        sizes = np.fromiter((ids.size for ids, _ in self._terms), dtype=np.int64)
        all_ids = np.concatenate([ids for ids, _ in self._terms])
        all_tf = np.concatenate([tf for _, tf in self._terms])
        all_pos = np.repeat(np.arange(len(self._terms), dtype=np.int32), sizes)
        order = _stable_order(all_ids)
        self._post_pos = all_pos[order]
        self._post_tf = all_tf[order]
        counts = np.bincount(all_ids, minlength=len(self.vocabulary))
        self._ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _stable_order(ids: _IntArray) -> _IntArray:
    """``np.argsort(ids, kind="stable")`` for non-negative ids below 2**31: each id and
    its index packed into one unique 64-bit key and sorted in place, a quarter faster
    than a stable argsort (equal ids keep their order, as the index breaks the tie)."""
    if ids.size >= 1 << 32:
        return np.argsort(ids, kind="stable")
    keys = (ids << 32) | np.arange(ids.size, dtype=np.int64)
    keys.sort()
    keys &= 0xFFFFFFFF
    return keys


def _sums(arrays: Sequence[npt.NDArray[np.float32]]) -> list[float]:
    """The sum of each of ``arrays``, in one pass over all of them."""
    if not arrays:
        return []
    ends = np.cumsum(np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays)))
    totals = np.concatenate([[0.0], np.cumsum(np.concatenate(arrays), dtype=np.float64)])
    sums: list[float] = (totals[ends] - totals[ends - np.diff(ends, prepend=0)]).tolist()
    return sums
