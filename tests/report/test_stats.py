"""Estimators against published reference values and edge cases."""

from __future__ import annotations

import math

import pytest

from lab.report.stats import pass_at_k, pass_hat_k, wilson_interval


@pytest.mark.parametrize(("successes", "trials", "low", "high"), [
    # statsmodels proportion_confint(count, nobs, method="wilson"), alpha=0.05
    (3, 5, 0.2307, 0.8824),
    (1, 10, 0.0179, 0.4042),
    (8, 10, 0.4902, 0.9433),
    (50, 100, 0.4038, 0.5962),
    (81, 263, 0.2553, 0.3662),  # Newcombe (1998), Stat. Med. 17:857, example: 81/263
])
def test_wilson_matches_published_values(successes: int, trials: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(successes, trials)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_wilson_zero_successes_is_pinned_to_zero() -> None:
    lo, hi = wilson_interval(0, 5)
    assert lo == 0.0
    assert round(hi, 4) == 0.4345


def test_wilson_all_successes_is_pinned_to_one() -> None:
    lo, hi = wilson_interval(5, 5)
    assert hi == 1.0
    assert round(lo, 4) == 0.5655


def test_wilson_single_trial() -> None:
    assert wilson_interval(1, 1)[1] == 1.0
    assert wilson_interval(0, 1)[0] == 0.0


@pytest.mark.parametrize(("successes", "trials"), [(0, 0), (-1, 3), (4, 3)])
def test_wilson_rejects_impossible_counts(successes: int, trials: int) -> None:
    with pytest.raises(ValueError, match=f"successes={successes}, trials={trials}"):
        wilson_interval(successes, trials)


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 0, 5, 0.0), (5, 1, 5, 1.0), (5, 5, 5, 1.0),  # k == n: "at least one passed"
    (10, 3, 1, 0.3),                                  # pass@1 is the plain rate
    (4, 2, 2, 1 - 1 / 6),                             # 1 - C(2,2)/C(4,2)
    (1, 1, 1, 1.0), (1, 0, 1, 0.0),
])
def test_pass_at_k_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 5, 5, 1.0), (5, 4, 5, 0.0), (5, 0, 5, 0.0),  # k == n: "every run passed"
    (10, 3, 1, 0.3),
    (4, 2, 2, 1 / 6),                                 # C(2,2)/C(4,2)
    (5, 3, 2, 3 / 10),                                # C(3,2)/C(5,2)
])
def test_pass_hat_k_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_k_greater_than_n_is_undefined() -> None:
    assert math.isnan(pass_at_k(3, 1, 5))
    assert math.isnan(pass_hat_k(3, 1, 5))


@pytest.mark.parametrize(("n", "c", "k"), [(0, 0, 1), (3, 4, 1), (3, 1, 0)])
def test_pass_estimators_reject_bad_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)
