"""Simulated comparisons for the error-rate test and benchmark (SPEC K6–K8).

Both sides' runs are drawn as independent Bernoulli trials from given true
rates per task; each simulated pair goes through the lab's own verdict code
(:func:`lab.compare.decide.task_tests` and :func:`~lab.compare.decide.decide`,
what ``compare_reports`` runs on a live comparison) with the default tolerance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab.compare.decide import ALPHA, decide, task_tests
from lab.compare.inference import Stratum
from lab.compare.power import aggregate_power
from lab.compare.verdicts import DEFAULT_TOLERANCE


@dataclass
class Outcome:
    """Tallies over ``reps`` simulated comparisons of one grid cell."""

    reps: int
    verdicts: Counter[str] = field(default_factory=Counter)
    rejected: int = 0            # aggregate test p <= α (either direction)
    covered: int = 0             # the aggregate 95 % interval held the true difference
    task_claims: int = 0         # per-task claims (adjusted p <= α) on tasks whose rate did not change
    any_task_claim: int = 0      # comparisons with at least one such claim (family-wise error)
    predicted_power: float = 0.0

    def share(self, *verdicts: str) -> float:
        return sum(self.verdicts[v] for v in verdicts) / self.reps


def simulate(base: Sequence[float], cand: Sequence[float], k: int, reps: int, seed: int,
             tolerance: float = DEFAULT_TOLERANCE) -> Outcome:
    """``reps`` comparisons of k runs per task and side drawn from the true rates ``base`` and ``cand``."""
    rng = np.random.default_rng(seed)
    t = len(base)
    true_delta = (sum(cand) - sum(base)) / t
    out = Outcome(reps, predicted_power=aggregate_power(base, cand, [k] * t, [k] * t, alpha=ALPHA))
    cb = rng.binomial(k, np.array(base), size=(reps, t))
    cc = rng.binomial(k, np.array(cand), size=(reps, t))
    unchanged = [i for i in range(t) if base[i] == cand[i]]
    for r in range(reps):
        strata = [Stratum(int(cb[r, i]), k, int(cc[r, i]), k) for i in range(t)]
        tests = task_tests(strata)
        decision = decide(strata, [i for i, x in enumerate(tests) if x.verdict == "regressed"], tolerance)
        out.verdicts[decision.verdict] += 1
        out.rejected += decision.test.p_value <= ALPHA
        low, high = decision.test.interval
        out.covered += low <= true_delta <= high
        claims = sum(tests[i].verdict != "inconclusive" for i in unchanged)
        out.task_claims += claims
        out.any_task_claim += claims > 0
    return out
