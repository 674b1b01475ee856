"""Keyword tokenization shared by the knowledge-base backends.

One tokenizer for indexing and querying, so a query term matches the indexed term:
Unicode word characters, lower-cased, English stop words dropped, each word reduced to
its Snowball stem (``studies``/``studied`` → ``studi``). Stemming matters for recall
on natural-language queries; the stop-word list keeps very common words out of the
postings, which keeps keyword queries fast on large indexes.

PyStemmer (the ``kb`` extra) is imported on first use. Words in scripts the stemmer
does not know pass through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["ENGLISH_STOP_WORDS", "TEXT_BREAK", "Tokenizer"]

_WORD = re.compile(r"\w+", re.UNICODE)
#: Stands between two texts in :meth:`Tokenizer.batch_words`; never part of a word.
TEXT_BREAK = "\x00"
_WORD_OR_BREAK = re.compile(r"\w+|\x00", re.UNICODE)
#: ASCII text to its words separated by spaces, lower-cased: an ASCII character is a
#: word character (``\w``) exactly when it is a letter, a digit or ``_``.
_ASCII_WORDS = str.maketrans(
    {
        c: (chr(c).lower() if chr(c).isalnum() or chr(c) == "_" or c == 0 else " ")
        for c in range(128)
    }
)
#: Distinct words remembered per tokenizer before the memo starts over.
_MEMO_LIMIT = 1_000_000

ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


class Tokenizer:
    """Text → keyword terms.

    :param language: a Snowball stemmer language (``"english"``, ``"french"``, ...), or
        ``None`` to index words unstemmed.
    :param stop_words: words dropped before stemming; English by default.
    """

    def __init__(
        self,
        language: str | None = "english",
        stop_words: Iterable[str] | None = None,
    ) -> None:
        self.language = language
        self.stop_words = frozenset(ENGLISH_STOP_WORDS if stop_words is None else stop_words)
        self._stem: Any = None
        if language is not None:
            self._stem = _stemmer(language)
        # word -> its term ("" for a stop word): one dict lookup per word once seen
        self._terms: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        """The terms of ``text``, in order, with repetitions."""
        words = _WORD.findall(text.lower())
        terms = self._terms
        try:
            found = list(map(terms.__getitem__, words))
        except KeyError:
            found = self._learn(words)
        return list(filter(None, found))

    def words(self, text: str) -> list[str]:
        """The words of ``text``, lower-cased, stop words included: what :meth:`term_map`
        maps to terms."""
        return _WORD.findall(text.lower())

    def batch_words(self, texts: Sequence[str]) -> list[str] | None:
        """The :meth:`words` of each of ``texts`` in one list, :data:`TEXT_BREAK` between
        two texts: one pass over the whole batch, several times faster than a call per
        text. ``None`` when a text holds :data:`TEXT_BREAK` itself."""
        joined = f" {TEXT_BREAK} ".join(texts)
        if joined.count(TEXT_BREAK) != max(len(texts) - 1, 0):
            return None
        if joined.isascii():
            return joined.translate(_ASCII_WORDS).split()
        return _WORD_OR_BREAK.findall(joined.lower())

    def term_map(self, words: Iterable[str]) -> dict[str, str]:
        """Each distinct word of ``words`` and its term (``""`` for a stop word)."""
        distinct = list(dict.fromkeys(words))
        kept = [w for w in distinct if w not in self.stop_words]
        stems = self._stem(kept) if self._stem is not None else kept
        mapping = dict.fromkeys(distinct, "")
        mapping.update(zip(kept, stems, strict=True))
        return mapping

    def _learn(self, words: list[str]) -> list[str]:
        """The terms of ``words`` (``""`` for stop words), remembering the new ones."""
        terms = self._terms
        if len(terms) > _MEMO_LIMIT:
            terms.clear()
        new = list(set(words).difference(terms))
        kept = [w for w in new if w not in self.stop_words]
        stems = self._stem(kept) if self._stem is not None else kept
        learned = dict.fromkeys(new, "")
        learned.update(zip(kept, stems, strict=True))
        terms.update(learned)
        found = list(map(terms.get, words))
        if None in found:  # another thread cleared the memo meanwhile
            return self._terms_uncached(words)
        return found  # type: ignore[return-value]

    def _terms_uncached(self, words: list[str]) -> list[str]:
        kept = [w for w in words if w not in self.stop_words]
        return list(self._stem(kept)) if self._stem is not None else kept

    @property
    def signature(self) -> str:
        """Identifies the tokenization; an index built with another one must be rebuilt."""
        return f"words-v1/{self.language or 'none'}/{len(self.stop_words)}"


@lru_cache(maxsize=8)
def _stemmer(language: str) -> Any:
    try:
        import Stemmer
    except ImportError as exc:
        from tether.errors import ConfigError

        raise ConfigError(
            'Keyword search needs PyStemmer: install "tether[kb]" (or PyStemmer), or '
            "use language=None to index words unstemmed."
        ) from exc
    try:
        stemmer = Stemmer.Stemmer(language)
    except KeyError:
        from tether.errors import ConfigError

        raise ConfigError(
            f"No stemmer for language {language!r}. Available: {', '.join(Stemmer.algorithms())}."
        ) from None
    # Its own cache of recent words only costs here: every caller keeps a memo of the
    # words it has seen and stems each distinct word once (three to four times faster
    # over a stream of new words, such as a knowledge base's first build).
    stemmer.maxCacheSize = 0
    return stemmer.stemWords
