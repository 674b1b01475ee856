"""Ranking metrics, pass@k and the paired bootstrap, on open-ended inputs."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether_evals import paired_bootstrap
from tether_evals.metrics import ndcg_at, recall_at
from tether_evals.report import pass_at_k

ids = st.lists(st.sampled_from("abcdefghij"), max_size=12)


@given(ids, st.sets(st.sampled_from("abcdefghij"), min_size=1), st.integers(1, 12))
def test_ndcg_and_recall_stay_in_range_and_an_ideal_ranking_scores_one(
    ranked: list[str], relevant: set[str], k: int
) -> None:
    assert 0.0 <= ndcg_at(ranked, relevant, k) <= 1.0 + 1e-12
    assert 0.0 <= recall_at(ranked, relevant, k) <= 1.0
    ideal = sorted(relevant) + [d for d in "abcdefghij" if d not in relevant]
    assert ndcg_at(ideal, relevant, k) == pytest.approx(1.0)


def test_ndcg_rewards_relevant_documents_ranked_higher() -> None:
    assert ndcg_at(["x", "a"], {"a"}, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg_at(["a", "x"], {"a"}, 10) == 1.0
    assert ndcg_at(["x", "a", "a"], {"a"}, 10) == ndcg_at(["x", "a"], {"a"}, 10)
    assert ndcg_at(["x", "y", "a"], {"a"}, 2) == 0.0
    assert recall_at(["a", "x", "b"], {"a", "b", "c"}, 2) == pytest.approx(1 / 3)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_grows_with_k_from_the_pass_rate_to_any_pass(n_c: tuple[int, int]) -> None:
    n, c = n_c
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values[0] == pytest.approx(c / n)
    assert values[-1] == (1.0 if c else 0.0)
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(values))


scores = st.lists(st.floats(0, 1), min_size=2, max_size=30)


@settings(max_examples=30, deadline=None)
@given(scores, st.floats(-0.5, 0.5))
def test_the_bootstrap_interval_holds_the_observed_mean_difference(
    a: list[float], shift: float
) -> None:
    b = [min(max(x + shift, 0.0), 1.0) for x in a]
    test = paired_bootstrap(a, b, resamples=500)
    assert test.low - 1e-9 <= test.mean_difference <= test.high + 1e-9
    assert 0 < test.p_value <= 1


def test_a_consistent_improvement_is_significant_and_noise_is_not() -> None:
    a = [0.2, 0.4, 0.5, 0.6, 0.3, 0.7, 0.1, 0.5] * 3
    better = [x + 0.1 for x in a]
    test = paired_bootstrap(a, better)
    assert test.verdict == "better" and test.low == pytest.approx(0.1)
    noisy = [x + (0.1 if i % 2 else -0.1) for i, x in enumerate(a)]
    assert paired_bootstrap(a, noisy).verdict == "no significant difference"
    assert paired_bootstrap(better, a).verdict == "worse"
    assert paired_bootstrap(a, b := list(a)).p_value == 1.0 and b == a
    assert paired_bootstrap(a, noisy, seed=3) == paired_bootstrap(a, noisy, seed=3)
    with pytest.raises(ValueError, match="as many"):
        paired_bootstrap([0.1], [0.1, 0.2])
