"""The group-sequential test of sequential variants (lab.compare.sequential, lab.compare.sequential_doc).

Boundaries against published values; the recursive integration against the
classic O'Brien–Fleming and Pocock constants; decisions on hand-made looks; a
seeded simulation of the error rate and of the runs saved (the larger one is
benchmarks/sequential_variants.py).
"""

from __future__ import annotations

import math
import random
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.compare.inference import Stratum, aggregate_interval
from lab.compare.sequential import (
    MAX_BOUNDARY,
    Statistic,
    TaskCounts,
    boundaries,
    crossing_probabilities,
    decide,
    information_fractions,
    obf_spending,
    repeated_interval,
    stratified_statistic,
)
from lab.compare.sequential_doc import apply_sequential, look, sequential_block, sequential_markdown
from lab.report.stats import Z_95
from lab.schemas import load_schema
from tests.helpers.sequential_sim import simulate

FIVE = information_fractions(25, 5)


def test_information_fractions_end_at_k() -> None:
    assert FIVE == (0.2, 0.4, 0.6, 0.8, 1.0)
    assert information_fractions(12, 5) == (5 / 12, 10 / 12, 1.0)
    assert information_fractions(4, 5) == (1.0,)
    with pytest.raises(ValueError, match="at least 1"):
        information_fractions(0, 5)


def test_spending_is_zero_at_start_and_alpha_at_the_end() -> None:
    assert obf_spending(0.0) == 0.0
    assert obf_spending(1.0) == pytest.approx(0.05, abs=1e-12)
    assert obf_spending(0.5) < obf_spending(0.8) < 0.05


def test_boundaries_match_the_published_lan_demets_obrien_fleming_values() -> None:
    # Lan–DeMets O'Brien–Fleming-type spending, two-sided α = 0.05 (α/2 per side), equally spaced looks,
    # as printed by gsDesign (sfLDOF), rpact (asOF) and ldbounds (iuse=1).
    assert boundaries(FIVE) == pytest.approx((4.8769, 3.3569, 2.6803, 2.2898, 2.0310), abs=6e-4)
    assert boundaries(information_fractions(20, 5)) == pytest.approx((4.3326, 2.9631, 2.3590, 2.0141), abs=6e-4)
    assert boundaries((1.0,)) == pytest.approx((1.95996,), abs=1e-5)  # one look: the fixed-sample z


def test_crossing_probabilities_reproduce_the_classic_constants() -> None:
    # Jennison & Turnbull (2000), Tables 2.1 and 2.3: K = 5, two-sided α = 0.05 — Pocock's constant 2.413,
    # O'Brien & Fleming's C = 2.040 with boundaries C·sqrt(K / k).
    assert sum(crossing_probabilities(FIVE, [2.413] * 5)) == pytest.approx(0.05, abs=3e-4)
    obf = [2.040 * math.sqrt(5 / k) for k in range(1, 6)]
    assert sum(crossing_probabilities(FIVE, obf)) == pytest.approx(0.05, abs=3e-4)


def test_each_look_spends_what_the_spending_function_allows() -> None:
    spent = crossing_probabilities(FIVE, boundaries(FIVE))
    cumulative = [sum(spent[: r + 1]) for r in range(5)]
    assert cumulative == pytest.approx([obf_spending(t) for t in FIVE], abs=2e-5)


def test_boundaries_hold_alpha_by_brownian_motion_simulation() -> None:
    """The canonical joint distribution simulated directly: z_r = S(t_r) / sqrt(t_r), S a Brownian motion."""
    rng = random.Random(7)
    bounds = boundaries(FIVE)
    crossed, reps = 0, 40_000
    for _ in range(reps):
        s = 0.0
        for t_prev, t, c in zip((0.0, *FIVE), FIVE, bounds, strict=False):
            s += rng.gauss(0.0, math.sqrt(t - t_prev))
            if abs(s / math.sqrt(t)) >= c:
                crossed += 1
                break
    assert crossed / reps == pytest.approx(0.05, abs=3 * math.sqrt(0.05 * 0.95 / reps))


@settings(max_examples=4, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=4, unique=True))
def test_any_schedule_spends_exactly_alpha(points: list[int]) -> None:
    top = max(points)
    fractions = tuple(p / top for p in sorted(points))
    assert sum(crossing_probabilities(fractions, boundaries(fractions))) == pytest.approx(0.05, abs=2e-4)


def test_stratified_statistic_on_a_hand_computed_example() -> None:
    # task 1: base 2/5, cand 4/5; task 2: base 5/5, cand 5/5.
    stat = stratified_statistic([TaskCounts(2, 5, 4, 5), TaskCounts(5, 5, 5, 5)])
    assert stat.delta == pytest.approx(0.2)  # ((0.8 − 0.4) + 0) / 2
    # task 1: pooled 0.6, hypergeometric variance 0.24 · (2/5) · 10/9; task 2 adds nothing
    assert stat.z == pytest.approx(0.2 / (math.sqrt(0.24 * 0.4 * 10 / 9) / 2))
    # the fixed-sample interval's variance: Agresti–Caffo p̃ = (x + 1) / (n + 2), p̃(1 − p̃) / (n − 1)
    var = (3 / 7 * 4 / 7 + 5 / 7 * 2 / 7) / 4 + 2 * (6 / 7 * 1 / 7) / 4
    assert stat.se == pytest.approx(math.sqrt(var) / 2)
    assert stat.tasks == 2


def test_statistic_leaves_out_unpaired_tasks_and_refuses_none() -> None:
    assert stratified_statistic([TaskCounts(1, 5, 1, 5), TaskCounts(0, 0, 3, 5)]).tasks == 1
    assert stratified_statistic([TaskCounts(5, 5, 5, 5)]).z == 0.0  # no variance: no evidence
    with pytest.raises(ValueError, match="no task"):
        stratified_statistic([TaskCounts(0, 0, 1, 5)])
    with pytest.raises(ValueError, match="within the judged"):
        stratified_statistic([TaskCounts(6, 5, 1, 5)])


def _stat(delta: float, z: float, se: float) -> Statistic:
    return Statistic(delta=delta, z=z, se=se, tasks=10)


@pytest.mark.parametrize(("stat", "last", "decision"), [
    (_stat(-0.12, -3.5, 0.03), False, "regressed"),
    (_stat(0.12, 3.5, 0.03), False, "improved"),
    (_stat(0.03, 3.5, 0.001), False, "unchanged"),    # significant but smaller than the tolerance
    (_stat(0.0, 0.1, 0.01), False, "unchanged"),      # repeated interval ±0.03 inside ±0.05
    (_stat(0.0, 0.1, 0.05), False, "continue"),
    (_stat(0.0, 0.1, 0.05), True, "inconclusive"),
    (_stat(0.04, 3.5, 0.05), True, "inconclusive"),   # crossed, below the tolerance, interval too wide
])
def test_decisions(stat: Statistic, last: bool, decision: str) -> None:
    assert decide(stat, 3.0, 0.05, last=last)[0] == decision


def test_repeated_interval_is_clipped() -> None:
    assert repeated_interval(_stat(0.9, 1.0, 0.2), 2.0) == (pytest.approx(0.5), 1.0)


def test_equal_variants_decide_a_direction_in_at_most_alpha_of_comparisons() -> None:
    rates = [0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0, 0.0, 0.5, 0.6]
    outcome = simulate(rates, rates, k=20, round_size=5, reps=1500, seed=20231)
    mc = 3 * math.sqrt(0.05 * 0.95 / outcome.reps)
    assert outcome.rate("improved", "regressed") <= 0.05 + mc
    outcome = simulate([0.5] * 20, [0.5] * 20, k=20, round_size=5, reps=1500, seed=5)
    assert outcome.rate("improved", "regressed") <= 0.05 + mc


_COUNTS = st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)).flatmap(
    lambda n: st.tuples(st.integers(0, n[0]), st.just(n[0]), st.integers(0, n[1]), st.just(n[1]))),
    min_size=1, max_size=12)


@given(_COUNTS, st.floats(Z_95, MAX_BOUNDARY))
def test_a_repeated_interval_is_the_fixed_sample_interval_widened_by_its_boundary(
        counts: list[tuple[int, int, int, int]], boundary: float) -> None:
    # At boundary 1.96 it is the comparison's own 95% interval, and no boundary makes it narrower:
    # the repeated interval a sequential comparison prints beside the fixed-sample one always contains it.
    stat = stratified_statistic([TaskCounts(*c) for c in counts])
    fixed = aggregate_interval([Stratum(c_base=b, n_base=nb, c_cand=c, n_cand=nc) for b, nb, c, nc in counts])
    assert repeated_interval(stat, Z_95) == pytest.approx(fixed)
    lo, hi = repeated_interval(stat, boundary)
    assert lo <= fixed[0] + 1e-12 and fixed[1] <= hi + 1e-12


@pytest.mark.parametrize(("base", "cand", "tolerance"), [
    ([0.95] * 20, [0.90] * 20, 0.05),                        # a loss of exactly the tolerance
    ([1.0, 1.0, 1.0, 1.0, 0.5], [0.9, 0.9, 0.9, 0.9, 0.4], 0.10),
    ([0.5] * 20, [0.55] * 20, 0.05),                         # a gain of exactly the tolerance
])
def test_a_change_of_the_tolerance_is_called_unchanged_in_at_most_alpha_of_comparisons(
        base: list[float], cand: list[float], tolerance: float) -> None:
    outcome = simulate(base, cand, k=20, round_size=5, reps=1500, seed=77, tolerance=tolerance)
    assert outcome.rate("unchanged") <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / outcome.reps)


def test_a_true_twenty_point_gain_stops_before_seventy_percent_of_the_runs() -> None:
    outcome = simulate([0.5] * 20, [0.7] * 20, k=20, round_size=5, reps=300, seed=3)
    assert outcome.mean_fraction < 0.70
    assert outcome.rate("improved") > 0.95


def _report(k: int, counts: list[tuple[str, int, int]], *, cost: float | None = None) -> dict[str, Any]:
    runs = sum(n for _, _, n in counts)
    doc: dict[str, Any] = {
        "header": {"k": k}, "summary": {"runs": runs, "judged": runs},
        "tasks": [{"taskId": t, "passes": x, "judged": n} for t, x, n in counts],
        "measured": {"tokensPerAttempt": 100.0, "runsJudged": runs}}
    if cost is not None:
        doc["estimated"] = {"costUsd": cost}
    return doc


def test_block_counts_runs_and_cost_saved_against_k() -> None:
    base = _report(5, [("a", 1, 5), ("b", 2, 5)], cost=0.10)
    cand = _report(5, [("a", 5, 5), ("b", 5, 5)], cost=0.30)
    fractions = information_fractions(20, 5)
    made = look(base, cand, fractions=fractions, index=0, alpha=0.05, tolerance=0.05)
    assert made["round"] == 1 and made["runsPerTask"] == 5 and made["boundary"] == pytest.approx(4.3326, abs=1e-3)
    block = sequential_block([made], base, cand, k=20, round_size=5, rounds=4, alpha=0.05, tolerance=0.05)
    assert (block["runsExecuted"], block["runsMax"], block["runsSaved"]) == (20, 80, 60)
    assert block["costUsdSaved"] == pytest.approx(60 * 0.40 / 20)
    assert block["tokensSaved"] == 60 * 100
    assert block["stoppedEarly"] is True and block["stoppedAtRound"] == 1


def test_apply_sequential_makes_the_aggregate_the_sequential_decision() -> None:
    base = _report(10, [("a", 2, 10), ("b", 3, 10)])
    cand = _report(10, [("a", 10, 10), ("b", 10, 10)])
    made = look(base, cand, fractions=(0.5, 1.0), index=0, alpha=0.05, tolerance=0.05)
    assert made["decision"] == "improved"
    block = sequential_block([made], base, cand, k=20, round_size=10, rounds=2, alpha=0.05, tolerance=0.05)
    comparison = {"aggregate": {"verdict": "unchanged", "reason": "fixed", "lostReliability": []}, "limits": ["x"]}
    out = apply_sequential(comparison, block)
    assert out["aggregate"]["verdict"] == "improved" and out["aggregate"]["reason"].startswith("sequential, round 1")
    assert out["sequential"]["fixedSampleVerdict"] == "unchanged" and comparison["aggregate"]["verdict"] == "unchanged"
    assert len(out["limits"]) == 2
    lost = apply_sequential({**comparison, "aggregate": {**comparison["aggregate"], "lostReliability": ["b"]}}, block)
    assert lost["aggregate"]["verdict"] == "mixed"
    text = sequential_markdown(out["sequential"])
    assert "## Sequential test" in text and "**improved** at round 1 of 2" in text and "runs: 40 made, 40 saved" in text
    schema = load_schema("comparison")
    jsonschema.validate(out["sequential"], {"$ref": "#/$defs/sequential", "$defs": schema["$defs"]})
