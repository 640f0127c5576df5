"""The comparison statistics against reference values (SPEC K6, K7): statsmodels, scipy, hand enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.compare.inference as inference
from lab.compare.inference import Stratum, aggregate_interval, fisher_p, holm, newcombe_interval, stratified_test

TABLES = [(3, 5, 1, 5), (0, 5, 5, 5), (5, 5, 5, 5), (0, 10, 0, 7), (12, 20, 19, 20), (7, 9, 2, 13), (1, 1, 0, 1)]


@pytest.mark.parametrize(("cb", "nb", "cc", "nc"), TABLES)
def test_newcombe_matches_statsmodels(cb: int, nb: int, cc: int, nc: int) -> None:
    from statsmodels.stats.proportion import confint_proportions_2indep  # imported by the tests that compare

    low, high = confint_proportions_2indep(cc, nc, cb, nb, method="newcomb", compare="diff")
    assert newcombe_interval(cb, nb, cc, nc) == pytest.approx((float(low), float(high)), abs=1e-12)


@pytest.mark.parametrize(("cb", "nb", "cc", "nc"), TABLES)
def test_fisher_matches_scipy(cb: int, nb: int, cc: int, nc: int) -> None:
    from scipy.stats import fisher_exact

    assert fisher_p(cb, nb, cc, nc) == float(fisher_exact([[cc, nc - cc], [cb, nb - cb]]).pvalue)


def test_fisher_published_value() -> None:
    # 0/5 against 5/5: the observed table is the most extreme of C(10, 5) = 252, on both sides
    assert fisher_p(0, 5, 5, 5) == pytest.approx(2 / 252)


@pytest.mark.parametrize("ps", [[0.01, 0.04, 0.03, 0.5, 0.005], [0.2], [0.04, 0.04], [0.001, 0.9, 0.02, 0.0101]])
def test_holm_matches_statsmodels(ps: list[float]) -> None:
    from statsmodels.stats.multitest import multipletests

    assert holm(ps) == pytest.approx(list(multipletests(ps, method="holm")[1]), abs=1e-15)


def _brute_force_p(strata: list[Stratum]) -> float:
    """P(|D*| >= |D|) over every relabelling of each task's runs (all equally likely under H0)."""
    per_task = []
    for s in strata:
        runs = [1] * s.c_base + [0] * (s.n_base - s.c_base) + [1] * s.c_cand + [0] * (s.n_cand - s.c_cand)
        options = []
        for cand in itertools.combinations(range(len(runs)), s.n_cand):
            c = sum(runs[i] for i in cand)
            options.append(c / s.n_cand - (sum(runs) - c) / s.n_base)
        per_task.append(options)
    observed = abs(sum(s.c_cand / s.n_cand - s.c_base / s.n_base for s in strata) / len(strata))
    outcomes = [abs(sum(combo) / len(strata)) for combo in itertools.product(*per_task)]
    return sum(o >= observed - 1e-9 for o in outcomes) / len(outcomes)


def test_stratified_test_by_hand() -> None:
    # Two tasks of 2 + 2 runs. a: base 2/2, cand 0/2; b: base 1/2, cand 1/2.  D = (-1 + 0) / 2 = -0.5.
    # Each task has 2 successes among 4 runs; relabelling gives cand 0, 1 or 2 of them with probability
    # 1/6, 4/6, 1/6, i.e. a task difference of -1, 0, +1. |D*| >= 0.5 when |d_a + d_b| >= 1:
    # (±1, 0) 2·(1/6)(4/6) = 8/36, (0, ±1) 8/36, (+1, +1) and (-1, -1) 2/36; (±1, ∓1) gives 0. p = 18/36.
    strata = [Stratum(2, 2, 0, 2), Stratum(1, 2, 1, 2)]
    result = stratified_test(strata)
    assert result.delta == -0.5 and result.method == "exact"
    assert result.p_value == pytest.approx(1 / 2)
    assert result.p_value == pytest.approx(_brute_force_p(strata))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)).flatmap(
    lambda n: st.tuples(st.integers(0, n[0]), st.just(n[0]), st.integers(0, n[1]), st.just(n[1]))),
    min_size=1, max_size=3))
def test_stratified_test_equals_brute_force_enumeration(tables: list[tuple[int, int, int, int]]) -> None:
    strata = [Stratum(*t) for t in tables]
    assert stratified_test(strata).p_value == pytest.approx(_brute_force_p(strata), abs=1e-9)


def test_monte_carlo_fallback_agrees_with_the_exact_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    strata = [Stratum(3, 10, 7, 10), Stratum(5, 8, 6, 9), Stratum(2, 6, 5, 6), Stratum(4, 10, 6, 10)]
    exact = stratified_test(strata)
    monkeypatch.setattr(inference, "EXACT_SUPPORT_MAX", 1)  # force the Monte Carlo branch (no mock: a constant)
    mc = stratified_test(strata)
    assert (exact.method, mc.method) == ("exact", "monte-carlo")
    se = math.sqrt(exact.p_value * (1 - exact.p_value) / inference.MC_DRAWS)
    assert abs(mc.p_value - exact.p_value) < 4 * se + 1 / inference.MC_DRAWS
    assert stratified_test(strata).p_value == mc.p_value  # a fixed seed: the same answer every time


def test_aggregate_interval_by_hand() -> None:
    # one task, base 1/5, cand 4/5: p~ = 2/7 and 5/7, variance each (2/7)(5/7)/4 = 10/196
    low, high = aggregate_interval([Stratum(1, 5, 4, 5)])
    half = 1.959963984540054 * math.sqrt(20 / 196)
    assert (low, high) == pytest.approx((0.6 - half, min(1.0, 0.6 + half)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), min_size=1, max_size=6))
def test_aggregate_is_antisymmetric_in_the_sides(pairs: list[tuple[int, int]]) -> None:
    forward = stratified_test([Stratum(b, 8, c, 8) for b, c in pairs])
    backward = stratified_test([Stratum(c, 8, b, 8) for b, c in pairs])
    assert forward.delta == pytest.approx(-backward.delta, abs=1e-12)
    assert forward.p_value == pytest.approx(backward.p_value, abs=1e-9)
    assert forward.interval == pytest.approx((-backward.interval[1], -backward.interval[0]), abs=1e-12)
    assert 0 <= forward.p_value <= 1 and forward.interval[0] <= forward.delta <= forward.interval[1]


def test_no_stratum_is_refused() -> None:
    with pytest.raises(ValueError, match="no paired task"):
        stratified_test([])
