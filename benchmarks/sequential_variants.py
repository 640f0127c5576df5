"""Sequential variants by simulation: false decisions, power and the runs saved (SPEC K9).

For each scenario (tasks, true rates of both sides, k at most, round size),
``--reps`` comparisons are drawn run by run from binomials and tested after
every round exactly as ``lab variants … sequential=true`` does
(lab.compare.sequential: Lan–DeMets O'Brien–Fleming spending, stratified z,
repeated intervals for equivalence). Printed per scenario: the share of each
decision, the false-decision rate (improved or regressed when nothing
changed; the wrong direction otherwise, and unchanged too when the change is
at least the tolerance) with its Monte Carlo standard error,
and the mean share of the maximum runs made before stopping.

    .venv/bin/python benchmarks/sequential_variants.py [--reps 4000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.sequential_sim import simulate  # noqa: E402

SPREAD_7 = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
EDGES_5 = [0.1, 0.5, 0.95, 1.0, 0.0]

SCENARIOS: list[tuple[str, list[float], list[float], int, int]] = [
    ("A/A  5 tasks 0.1–1 (edges)", EDGES_5, EDGES_5, 20, 5),
    ("A/A  7 tasks 0.3–0.9", SPREAD_7, SPREAD_7, 10, 5),
    ("A/A  7 tasks 0.3–0.9", SPREAD_7, SPREAD_7, 20, 5),
    ("A/A 20 tasks 0.5", [0.5] * 20, [0.5] * 20, 20, 5),
    ("A/A 20 tasks 0.8", [0.8] * 20, [0.8] * 20, 20, 5),
    ("A/A 20 tasks 0.5, rounds of 1", [0.5] * 20, [0.5] * 20, 20, 1),
    ("+20 20 tasks 0.5→0.7", [0.5] * 20, [0.7] * 20, 20, 5),
    ("+10 20 tasks 0.5→0.6", [0.5] * 20, [0.6] * 20, 20, 5),
    ("−20 7 tasks 0.3–0.9", SPREAD_7, [max(0.0, r - 0.2) for r in SPREAD_7], 20, 5),
    ("±0 20 tasks 0.9, tolerance 0.10", [0.9] * 20, [0.9] * 20, 40, 10),
    ("−5 20 tasks 0.95→0.9 (= tolerance)", [0.95] * 20, [0.9] * 20, 20, 5),
    ("+5 20 tasks 0.5→0.55 (= tolerance)", [0.5] * 20, [0.55] * 20, 20, 5),
    ("−10 5 tasks edges, tolerance 0.10", [1.0, 1.0, 1.0, 1.0, 0.5], [0.9, 0.9, 0.9, 0.9, 0.4], 20, 5),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{'scenario':34} {'k':>3} {'rnd':>3} {'improved':>9} {'regressed':>9} {'unchanged':>9} "
          f"{'inconcl.':>9} {'false':>7} {'±MC':>6} {'runs used':>9}")
    started = time.perf_counter()
    for i, (name, base, cand, k, round_size) in enumerate(SCENARIOS):
        tolerance = 0.10 if "tolerance 0.10" in name else 0.05
        out = simulate(base, cand, k=k, round_size=round_size, reps=args.reps, seed=args.seed + i,
                       tolerance=tolerance)
        true_delta = sum(cand) / len(cand) - sum(base) / len(base)
        if abs(true_delta) < 1e-12:
            false = out.rate("improved", "regressed")
        else:  # the wrong direction; and "unchanged" for a change of at least the tolerance
            false = out.rate("regressed" if true_delta > 0 else "improved")
            if abs(true_delta) >= tolerance - 1e-12:
                false += out.rate("unchanged")
        mc = math.sqrt(max(false, 0.05) * (1 - max(false, 0.05)) / out.reps)
        shares = [out.rate(d) for d in ("improved", "regressed", "unchanged", "inconclusive")]
        print(f"{name:34} {k:>3} {round_size:>3} " + " ".join(f"{100 * s:8.1f}%" for s in shares)
              + f" {100 * false:6.2f}% {100 * mc:5.2f} {100 * out.mean_fraction:8.1f}%")
    print(f"({args.reps} comparisons per scenario, {time.perf_counter() - started:.0f} s; false = improved or "
          "regressed when nothing changed, else the wrong direction or, for a change of at least the tolerance, "
          "unchanged; runs used = mean share of k × tasks × 2)")


if __name__ == "__main__":
    main()
