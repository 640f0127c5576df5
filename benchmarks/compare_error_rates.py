"""Error rates of `lab compare` by simulation: the tables docs/compare.md quotes (SPEC K4, K6–K8).

    .venv/bin/python benchmarks/compare_error_rates.py [reps=1000] [seed=1] [part=all|aa|power|gate]

Both sides of each simulated comparison are drawn as independent Bernoulli
runs from true rates per task and judged by the lab's own verdict code
(``tests/helpers/compare_sim.py``: lab.compare.decide, as compare_reports).
Prints, over the grid tasks 5/7/20 × k 5/10/20:

1. A/A (nothing changed): the share of each aggregate verdict, the
   family-wise rate of per-task (Holm) claims, and the interval's coverage;
2. a real change: the power the lab predicts beside the power achieved,
   the share called *improved*, and coverage;
3. the admission gate (no task's own exact test falls at α, uncorrected):
   false alarms under A/A and detection of one broken task (rate -> 0).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.compare.decide import ALPHA, task_tests  # noqa: E402
from lab.compare.inference import Stratum  # noqa: E402
from tests.helpers.compare_sim import simulate  # noqa: E402

TASKS = (5, 7, 20)
KS = (5, 10, 20)


def spread(t: int, lo: float = 0.1, hi: float = 0.95) -> list[float]:
    return [lo + (hi - lo) * i / (t - 1) for i in range(t)]


def shapes(t: int) -> list[tuple[str, list[float]]]:
    return [("0.1–0.95", spread(t)), ("0 and 1 + 0.1–0.95", [0.0, 1.0, *spread(t - 2)]), ("all 0.5", [0.5] * t),
            ("all 0.9", [0.9] * t)]


def changes(t: int) -> list[tuple[str, list[float], list[float]]]:
    return [("0.5 → 0.6", [0.5] * t, [0.6] * t), ("0.5 → 0.7", [0.5] * t, [0.7] * t),
            ("0.1–0.85 +0.1", spread(t, 0.1, 0.85), spread(t, 0.2, 0.95)),
            ("0.8 → 0.6", [0.8] * t, [0.6] * t), ("0.9 → 1.0", [0.9] * t, [1.0] * t)]


def gate(t: int, k: int, reps: int, seed: int) -> tuple[float, float]:
    """(false alarms under A/A, detection of one broken task) of the admission gate."""
    rng = np.random.default_rng(seed)
    base = spread(t, 0.3, 0.95)
    out = []
    for cand in (base, [*base[:-1], 0.0]):
        cb, cc = rng.binomial(k, base, size=(reps, t)), rng.binomial(k, cand, size=(reps, t))
        fired = 0
        for r in range(reps):
            tests = task_tests([Stratum(int(cb[r, i]), k, int(cc[r, i]), k) for i in range(t)])
            fired += any(x.delta < 0 and x.p_value <= ALPHA for x in tests)
        out.append(fired / reps)
    return out[0], out[1]


def main(argv: list[str]) -> None:
    if any("=" not in a for a in argv):  # --help, or a word that is not KEY=VALUE
        raise SystemExit((__doc__ or "").strip().splitlines()[2].strip())
    opts = dict(a.split("=", 1) for a in argv)
    reps, seed = int(opts.get("reps", 1000)), int(opts.get("seed", 1))
    part = opts.get("part", "all")
    if part not in ("all", "aa", "power", "gate"):
        raise SystemExit(f"part must be all, aa, power or gate, got {part!r}")
    t0 = time.perf_counter()
    if part in ("all", "aa"):
        a_a(reps, seed)
    if part in ("all", "power"):
        real_change(reps, seed)
    if part in ("all", "gate"):
        admission(reps, seed)
    print(f"\n{time.perf_counter() - t0:.0f} s")


def a_a(reps: int, seed: int) -> None:
    print(f"## A/A: both sides from the same rates ({reps} comparisons per row)\n")
    print("| tasks | k | rates | improved | regressed | mixed | unchanged | inconclusive | task claims (FWER) | coverage |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst_claim, worst_cov = 0.0, 1.0
    for t in TASKS:
        for k in KS:
            for name, rates in shapes(t):
                o = simulate(rates, rates, k, reps, seed=seed + 1000 * t + k)
                claim = o.share("improved", "regressed", "mixed")
                worst_claim, worst_cov = max(worst_claim, claim), min(worst_cov, o.covered / reps)
                print(f"| {t} | {k} | {name} | {o.share('improved'):.1%} | {o.share('regressed'):.1%} | "
                      f"{o.share('mixed'):.1%} | {o.share('unchanged'):.1%} | {o.share('inconclusive'):.1%} | "
                      f"{o.any_task_claim / reps:.1%} | {o.covered / reps:.1%} |")
    print(f"\nworst share claiming a direction or mixed: {worst_claim:.1%}; worst coverage: {worst_cov:.1%}\n")


def real_change(reps: int, seed: int) -> None:
    print(f"## A real change: predicted and achieved power of the aggregate test ({reps} per row)\n")
    print("| tasks | k | change | predicted | achieved | gap (points) | improved | regressed | coverage |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst_gap, worst_cov = 0.0, 1.0
    for t in TASKS:
        for k in KS:
            for name, base, cand in changes(t):
                o = simulate(base, cand, k, reps, seed=seed + 7 + 1000 * t + k)
                achieved = o.rejected / reps
                gap = 100 * (achieved - o.predicted_power)
                worst_gap = max(worst_gap, abs(gap))
                worst_cov = min(worst_cov, o.covered / reps)
                print(f"| {t} | {k} | {name} | {o.predicted_power:.1%} | {achieved:.1%} | {gap:+.1f} | "
                      f"{o.share('improved'):.1%} | {o.share('regressed'):.1%} | {o.covered / reps:.1%} |")
    print(f"\nlargest |achieved − predicted|: {worst_gap:.1f} points; "
          f"worst coverage overall: {worst_cov:.1%}\n")


def admission(reps: int, seed: int) -> None:
    print(f"## The admission gate: any task's own Fisher test falls at α = {ALPHA:g} ({reps} per row)\n")
    print("| tasks | k | false alarm (A/A) | one broken task caught |")
    print("|---|---|---|---|")
    for t in TASKS:
        for k in KS:
            alarm, caught = gate(t, k, reps, seed + 31 * t + k)
            print(f"| {t} | {k} | {alarm:.1%} | {caught:.1%} |")


if __name__ == "__main__":
    main(sys.argv[1:])
