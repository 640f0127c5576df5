"""Monte Carlo of sequential variants (lab.compare.sequential): decisions and runs used.

Each replicate draws, round by round, the passes of every task on each side
from a binomial with the side's true rate, looks after each round as
``lab variants … sequential=true`` does, and stops at the first decision.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

from lab.compare.sequential import TaskCounts, boundaries, decide, information_fractions, stratified_statistic


@dataclass
class Outcome:
    decisions: Counter[str]
    mean_fraction: float
    """Mean share of the maximum runs made before stopping."""
    reps: int

    def rate(self, *decisions: str) -> float:
        return sum(self.decisions[d] for d in decisions) / self.reps


def _binomial(rng: random.Random, table: list[float]) -> int:
    u = rng.random()
    for x, cumulative in enumerate(table):
        if u <= cumulative:
            return x
    return len(table) - 1


def _table(n: int, p: float) -> list[float]:
    out, total = [], 0.0
    for x in range(n + 1):
        total += comb(n, x) * p ** x * (1 - p) ** (n - x)
        out.append(total)
    return out


def simulate(base: Sequence[float], cand: Sequence[float], *, k: int, round_size: int, reps: int, seed: int,
             tolerance: float = 0.05, alpha: float = 0.05) -> Outcome:
    """Decisions of ``reps`` sequential comparisons with true per-task rates ``base`` and ``cand``."""
    rng = random.Random(seed)
    fractions = information_fractions(k, round_size)
    bounds = boundaries(fractions, alpha)
    sizes = [round(t * k) for t in fractions]
    steps = [b - a for a, b in zip([0, *sizes], sizes, strict=False)]
    tables = {(n, p): _table(n, p) for n in set(steps) for p in {*base, *cand}}
    decisions: Counter[str] = Counter()
    used = 0.0
    for _ in range(reps):
        xb, xc = [0] * len(base), [0] * len(cand)
        for r, (n, step) in enumerate(zip(sizes, steps, strict=True)):
            for t, (pb, pc) in enumerate(zip(base, cand, strict=True)):
                xb[t] += _binomial(rng, tables[(step, pb)])
                xc[t] += _binomial(rng, tables[(step, pc)])
            stat = stratified_statistic([TaskCounts(b, n, c, n) for b, c in zip(xb, xc, strict=True)])
            decision, _ = decide(stat, bounds[r], tolerance, last=r == len(sizes) - 1)
            if decision != "continue":
                decisions[decision] += 1
                used += n / k
                break
    return Outcome(decisions=decisions, mean_fraction=used / reps, reps=reps)
