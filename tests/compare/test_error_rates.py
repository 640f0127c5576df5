"""Error rates of the comparison verdicts by seeded simulation (SPEC K6–K8).

A small grid, fast enough for every test run; ``benchmarks/compare_error_rates.py``
prints the full table. Each bound allows two Monte Carlo standard errors.
"""

from __future__ import annotations

import math

import pytest

from tests.helpers.compare_sim import Outcome, simulate

# One worker builds this module's shared fixture (scope="module") once, instead of each worker that runs one of its tests.
pytestmark = pytest.mark.xdist_group("error-rates")


def spread(t: int, lo: float = 0.1, hi: float = 0.95) -> list[float]:
    return [lo + (hi - lo) * i / (t - 1) for i in range(t)]


def mc(p: float, n: int) -> float:
    """Two Monte Carlo standard errors of a rate p estimated from n draws."""
    return 2 * math.sqrt(p * (1 - p) / n)


@pytest.fixture(scope="module")
def a_a() -> list[Outcome]:
    """Both sides from the same rates: 5 tasks at k=5 with an all-fail and an all-pass task, 7 at 0.5 and
    k=10, 20 spread over 0.1–0.95 at k=20."""
    cells = [([0.0, 1.0, 0.3, 0.6, 0.9], 5), ([0.5] * 7, 10), (spread(20), 20)]
    return [simulate(rates, rates, k, reps=150, seed=7 + i) for i, (rates, k) in enumerate(cells)]


@pytest.fixture(scope="module")
def real_change() -> Outcome:
    """20 tasks, 0.5 -> 0.6, k = 20."""
    return simulate([0.5] * 20, [0.6] * 20, 20, reps=300, seed=11)


def test_with_nothing_changed_a_direction_is_claimed_at_most_alpha(a_a: list[Outcome]) -> None:
    reps = sum(o.reps for o in a_a)
    claimed = sum(o.verdicts[v] for o in a_a for v in ("improved", "regressed", "mixed")) / reps
    assert claimed <= 0.05 + mc(0.05, reps), [dict(o.verdicts) for o in a_a]
    family_wise = sum(o.any_task_claim for o in a_a) / reps  # any per-task Holm claim in a comparison
    assert family_wise <= 0.05 + mc(0.05, reps)


def test_the_aggregate_interval_covers_the_true_difference(a_a: list[Outcome], real_change: Outcome) -> None:
    outcomes = [*a_a, real_change]
    reps = sum(o.reps for o in outcomes)
    coverage = sum(o.covered for o in outcomes) / reps
    assert coverage >= 0.94 - mc(0.94, reps), [o.covered / o.reps for o in outcomes]


def test_a_real_change_is_found_and_the_predicted_power_holds(real_change: Outcome) -> None:
    o = real_change
    assert o.share("improved") >= 0.70
    achieved = o.rejected / o.reps
    assert abs(achieved - o.predicted_power) <= 0.05 + mc(o.predicted_power, o.reps), (achieved, o.predicted_power)
