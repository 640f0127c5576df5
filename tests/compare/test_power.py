"""Power and sample size (SPEC K8) against references: scipy's exact test, statsmodels' power, and each other."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.compare.inference import Stratum, stratified_test
from lab.compare.power import (
    aggregate_detectable_difference,
    aggregate_power,
    fisher_power,
    runs_per_task_for_difference,
    task_detectable_difference,
    task_runs_for_difference,
)
from lab.report.power import fisher_region


@pytest.mark.parametrize(("nb", "nc"), [(5, 5), (5, 7), (8, 8), (3, 9), (1, 4)])
def test_fisher_rejection_region_is_scipys(nb: int, nc: int) -> None:
    from scipy.stats import fisher_exact  # imported by the tests using it

    scipy_region = {(b, c) for b in range(nb + 1) for c in range(nc + 1)
                    if fisher_exact([[c, nc - c], [b, nb - b]]).pvalue <= 0.05}
    assert fisher_region(nb, nc, 0.05) == scipy_region


def test_fisher_power_is_the_probability_of_scipys_rejections() -> None:
    from scipy.stats import binom, fisher_exact  # imported by the tests using it

    nb = nc = 10
    expected = sum(binom.pmf(b, nb, 0.3) * binom.pmf(c, nc, 0.8)
                   for b in range(nb + 1) for c in range(nc + 1)
                   if fisher_exact([[c, nc - c], [b, nb - b]]).pvalue <= 0.05)
    assert fisher_power(0.3, 0.8, nb, nc) == pytest.approx(float(expected), abs=1e-12)


def test_one_stratum_power_is_statsmodels_without_the_continuity_correction_at_large_n() -> None:
    from statsmodels.stats.proportion import power_proportions_2indep  # imported by the tests using it

    # the half-step correction is 1/n: negligible at n = 100,000, so the formulas must agree
    ref = power_proportions_2indep(0.01, 0.5, 100_000, alpha=0.05).power
    assert aggregate_power([0.5], [0.51], [100_000], [100_000]) == pytest.approx(float(ref), abs=2e-3)


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(1, 30)), min_size=1, max_size=12))
@settings(max_examples=50, deadline=None)
def test_aggregate_power_is_a_probability_and_blind_to_which_side_is_which(
        tasks: list[tuple[float, float, int]]) -> None:
    base, cand, runs = ([x[i] for x in tasks] for i in range(3))
    forward = aggregate_power(base, cand, runs, runs)
    assert 0.0 <= forward <= 1.0
    assert aggregate_power(cand, base, runs, runs) == pytest.approx(forward, abs=1e-9)  # D -> -D, same test


def _achieved_power(base: list[float], cand: list[float], k: int, reps: int, seed: int) -> float:
    """Share of seeded simulated comparisons that the lab's own stratified test rejects at 0.05."""
    rng = np.random.default_rng(seed)
    cb, cc = rng.binomial(k, base, size=(reps, len(base))), rng.binomial(k, cand, size=(reps, len(base)))
    return sum(stratified_test([Stratum(int(b), k, int(c), k) for b, c in zip(cb[r], cc[r], strict=True)]).p_value
               <= 0.05 for r in range(reps)) / reps


@pytest.mark.parametrize(("k", "seed"), [(5, 3), (20, 4)])
def test_predicted_power_holds_where_every_task_moves_to_a_rate_of_one(k: int, seed: int) -> None:
    # 7 tasks 0.9 -> 1.0: many tasks pass every run on both sides and add nothing to the test
    reps = 600
    achieved = _achieved_power([0.9] * 7, [1.0] * 7, k, reps, seed)
    predicted = aggregate_power([0.9] * 7, [1.0] * 7, [k] * 7, [k] * 7)
    two_se = 2 * math.sqrt(achieved * (1 - achieved) / reps)
    assert abs(achieved - predicted) <= 0.05 + two_se, (k, achieved, predicted)


def test_task_runs_beyond_the_exact_range_is_the_corrected_normal_size() -> None:
    from statsmodels.stats.proportion import samplesize_proportions_2indep_onetail  # imported by the tests using it

    n0 = samplesize_proportions_2indep_onetail(0.05, 0.5, 0.8, alpha=0.05, alternative="two-sided")
    corrected = n0 / 4 * (1 + math.sqrt(1 + 4 / (n0 * 0.05))) ** 2  # Fleiss, Tytun & Ury (1980)
    assert abs(task_runs_for_difference(0.5, 0.05) - corrected) <= 2  # statsmodels uses the mean rate apart


def test_task_runs_reach_the_power_exactly_and_not_one_run_earlier() -> None:
    n = task_runs_for_difference(0.2, 0.6)
    assert fisher_power(0.2, 0.8, n, n) >= 0.8 and all(fisher_power(0.2, 0.8, m, m) < 0.8 for m in range(2, n))


def test_detectable_difference_inverts_the_power() -> None:
    d = task_detectable_difference(0.5, 20, 20)
    assert 0.35 < d < 0.5
    assert fisher_power(0.5, 0.5 + d, 20, 20) >= 0.8 - 1e-6 or fisher_power(0.5, 0.5 - d, 20, 20) >= 0.8 - 1e-6


def test_a_task_too_small_to_detect_anything_says_inf() -> None:
    assert task_detectable_difference(0.5, 2, 2) == math.inf


def test_aggregate_detectable_and_runs_per_task_agree() -> None:
    rates = [0.3, 0.5, 0.6, 0.8, 0.9, 0.5, 0.7]
    d = aggregate_detectable_difference(rates, [10] * 7, [10] * 7)
    assert 0.1 < d < 0.3
    assert runs_per_task_for_difference(rates, d) in (10, 11)  # the harder direction decides both
    assert runs_per_task_for_difference([0.5] * 20, 0.1) == 21


def test_all_pass_tasks_can_only_fall() -> None:
    assert runs_per_task_for_difference([1.0, 1.0], 0.3) == runs_per_task_for_difference([1.0, 1.0], -0.3)
    assert math.isfinite(aggregate_detectable_difference([1.0] * 5, [10] * 5, [10] * 5))


@pytest.mark.parametrize("bad", [{"rate": 1.5}, {"rate": 0.5, "delta": 0.0}])
def test_bad_arguments_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        task_runs_for_difference(bad["rate"], bad.get("delta", 0.1))


@pytest.mark.parametrize(("rate", "tasks"), [(1.0, 7), (0.0, 5), (0.5, 7), (0.9, 20)])
def test_the_k_for_equivalence_is_the_k_whose_interval_fits_inside_the_tolerance(rate: float, tasks: int) -> None:
    """With every run passing, the interval still has width (Agresti–Caffo): k=1 would be a false promise."""
    from lab.compare.inference import Stratum, aggregate_interval
    from lab.report.power import EQUIVALENCE_MIN_RUNS, equivalence_runs

    k = equivalence_runs([rate] * tasks, 0.0, 0.05)
    assert k is not None and k >= EQUIVALENCE_MIN_RUNS

    def interval(n: int) -> tuple[float, float]:
        c = round(rate * n)
        return aggregate_interval([Stratum(c, n, c, n)] * tasks)

    low, high = interval(k)
    assert -0.05 <= low and high <= 0.05  # at k the interval of these counts fits
    if k > EQUIVALENCE_MIN_RUNS:
        low, high = interval(k - 1)
        assert low < -0.05 or high > 0.05  # and not one run sooner
