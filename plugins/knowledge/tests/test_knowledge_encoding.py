"""Batch term encoding gives exactly the terms and counts the tokenizer gives."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tether_knowledge.keyword_index import KeywordIndex
from tether_knowledge.text import TEXT_BREAK, Tokenizer

WORDS = ["the", "studies", "studied", "retry", "Retries", "of", "ünïcode", "x1", "_", "a", "ΟΔΟΣ"]
PUNCTUATION = st.sampled_from([" ", "\n", "-", "\x00", "\x1f", "\t", ".", "é", "\u2028", "ß"])
texts = st.lists(
    st.lists(st.sampled_from(WORDS) | st.text(max_size=6), max_size=30).map(" ".join)
    | st.lists(st.sampled_from(WORDS) | PUNCTUATION, max_size=30).map("".join),
    max_size=12,
)


@settings(deadline=None, max_examples=150)
@given(st.lists(texts, min_size=1, max_size=3))
def test_encode_texts_counts_what_the_tokenizer_yields(batches: list[list[str]]) -> None:
    tokenizer = Tokenizer()
    index = KeywordIndex()
    for batch in batches:  # later batches reuse the word memo of earlier ones
        encoded = index.encode_texts(batch, tokenizer)
        assert len(encoded) == len(batch)
        for text, (ids, counts) in zip(batch, encoded, strict=True):
            got = {
                index.terms[i]: int(c) for i, c in zip(ids.tolist(), counts.tolist(), strict=True)
            }
            assert got == dict(Counter(tokenizer(text)))


@settings(deadline=None, max_examples=150)
@given(texts)
def test_batch_words_are_the_words_of_each_text(batch: list[str]) -> None:
    tokenizer = Tokenizer()
    words = tokenizer.batch_words(batch)
    if any(TEXT_BREAK in text for text in batch):
        assert words is None
        return
    assert words is not None
    per_text = [tokenizer.words(text) for text in batch]
    assert words == [w for i, ws in enumerate(per_text) for w in ([TEXT_BREAK] if i else []) + ws]


def test_a_new_tokenizer_starts_the_word_memo_over() -> None:
    index = KeywordIndex()
    stemmed = index.encode_texts(["studies"], Tokenizer("english"))[0][0]
    plain = index.encode_texts(["studies"], Tokenizer(None))[0][0]
    assert [index.terms[i] for i in stemmed.tolist()] == ["studi"]
    assert [index.terms[i] for i in plain.tolist()] == ["studies"]


def test_stable_order_is_a_stable_argsort() -> None:
    import numpy as np

    from tether_knowledge.keyword_index import _stable_order

    rng = np.random.default_rng(3)
    for size, high in ((0, 1), (1, 1), (1000, 5), (50_000, 70_000)):
        ids = rng.integers(0, high, size=size, dtype=np.int64)
        assert _stable_order(ids).tolist() == np.argsort(ids, kind="stable").tolist()
    ids = np.array([2**31 - 1, 0, 2**31 - 1, 0], dtype=np.int64)
    assert _stable_order(ids).tolist() == [1, 3, 0, 2]
