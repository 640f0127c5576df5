"""A group-sequential test of two variants, look by look (SPEC K9): pure functions.

The statistic is the difference of the task-weighted mean success rates,
cand − base, stratified by task (tasks are strata; the runs of a task are
assumed independent): ``D = mean_t(p̂c_t − p̂b_t)``. At each look it is
standardised under "no difference" with each task's pooled rate
``p̄_t = (xb_t + xc_t) / N_t``, ``N_t = nb_t + nc_t``::

    z = D / sqrt( Σ_t p̄_t (1 − p̄_t) (1/nb_t + 1/nc_t) · N_t / (N_t − 1) / T² )

— the variance of each task's difference under a permutation of its runs'
labels given its passes (the hypergeometric variance of Mantel & Haenszel
1959, JNCI 22:719–748); with few runs per task it keeps the test at its
level where the binomial variance ``p̄(1 − p̄)(1/nb + 1/nc)`` exceeds it.

**Boundaries.** The type-I error α (two-sided) is spent over the looks with
the O'Brien–Fleming-type spending function of Lan & DeMets (1983, "Discrete
sequential boundaries for clinical trials", Biometrika 70:659–663), each side
spending α/2 as ``α_side(t) = 2 − 2 Φ(z_{1 − α/4} / √t)`` at information
fraction ``t`` (here: runs per task so far / the maximum k). The nominal
boundary ``c_r`` of look r solves
``P(|Z_r| ≥ c_r, no earlier crossing) = 2 (α_side(t_r) − α_side(t_{r−1}))``
for the canonical joint distribution of the sequence of z statistics
(independent increments, ``corr(Z_i, Z_j) = sqrt(t_i / t_j)``), found by the
recursive numerical integration of Armitage, McPherson & Rowe (1969) as set out
in Jennison & Turnbull (2000), *Group Sequential Methods with Applications to
Clinical Trials*, ch. 19. For 5 equally spaced looks at α = 0.05 this gives
4.877, 3.357, 2.680, 2.290, 2.031 (the values gsDesign, rpact and ldbounds
print for this design).

**Equivalence.** The repeated confidence interval of look r,
``D ± c_r · SE_r`` (Jennison & Turnbull 1989, "Interim analyses: the
repeated confidence interval approach", JRSS B 51:305–361), covers the true
difference at every look at once with probability ≥ 1 − α. ``SE_r`` is the
standard error of the fixed-sample interval of a comparison
(:func:`lab.compare.inference.aggregate_interval`: Agresti & Caffo's adjusted
rates ``(x + 1) / (n + 2)``, so a task at 0/n or n/n still has a width, over
n − 1), so the repeated interval is that 95 % interval widened by c_r / 1.96
and never narrower (c_r ≥ 1.96). The test stops for equivalence
("unchanged") when that interval lies inside ±tolerance, so the chance of
calling a change of at least the tolerance "unchanged" is at most α.

**Decision at a look** (:func:`decide`), in order: the boundary is crossed
and D < 0 → *regressed*; crossed and D > tolerance → *improved*; the repeated
interval inside ±tolerance → *unchanged*; the last look → *inconclusive*;
else continue. Stopping is allowed only at these decisions, so the chance of
any *improved* or *regressed* when nothing changed is at most α however many
looks were made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal

from lab.compare.inference import rate_variance

_N = NormalDist()
GRID = 201
"""Simpson nodes per look of the recursive integration (odd)."""
MAX_BOUNDARY = 8.0
"""A look that may spend (nearly) nothing gets this boundary: Φ(−8) ≈ 6e−16."""

Decision = Literal["improved", "regressed", "unchanged", "inconclusive", "continue"]


def information_fractions(k: int, round_size: int) -> tuple[float, ...]:
    """The looks' information fractions: round, 2·round, … up to k runs per task, over k.

    Raises:
        ValueError: k or round_size below 1.
    """
    if k < 1 or round_size < 1:
        raise ValueError(f"k and round must be at least 1, got {k!r} and {round_size!r}")
    counts = list(range(round_size, k, round_size)) + [k]
    return tuple(n / k for n in counts)


def obf_spending(t: float, alpha: float = 0.05) -> float:
    """Two-sided α spent by information fraction ``t`` ∈ [0, 1] (Lan–DeMets O'Brien–Fleming type).

    ``2 · (2 − 2Φ(z_{1−α/4} / √t))``: each side spends α/2; 0 at t = 0, α at t = 1.
    """
    if t <= 0:
        return 0.0
    side = alpha / 2
    return 2 * (2 - 2 * _N.cdf(_N.inv_cdf(1 - side / 2) / math.sqrt(min(t, 1.0))))


def _simpson(c: float) -> tuple[list[float], list[float]]:
    """Nodes and weights of Simpson's rule on [−c, c] with GRID nodes."""
    h = 2 * c / (GRID - 1)
    nodes = [-c + i * h for i in range(GRID)]
    weights = [h / 3 * (1 if i in (0, GRID - 1) else (4 if i % 2 else 2)) for i in range(GRID)]
    return nodes, weights


class _Path:
    """The sub-density of Z at the last look on the paths that have not crossed yet."""

    def __init__(self, t: float, c: float) -> None:
        self.t = t
        self.nodes, weights = _simpson(c)
        self.mass = [w * _N.pdf(z) for z, w in zip(self.nodes, weights, strict=True)]

    def stay(self, t: float, c: float) -> float:
        """P(no crossing so far and |Z(t)| < c)."""
        root_d = math.sqrt(t - self.t)
        st, sp = math.sqrt(t), math.sqrt(self.t)
        total = 0.0
        for u, m in zip(self.nodes, self.mass, strict=True):
            total += m * (_N.cdf((c * st - u * sp) / root_d) - _N.cdf((-c * st - u * sp) / root_d))
        return total

    def advance(self, t: float, c: float) -> None:
        """Move to the look at fraction ``t`` with boundary ``c`` (keep the paths inside ±c)."""
        root_d = math.sqrt(t - self.t)
        st, sp = math.sqrt(t), math.sqrt(self.t)
        nodes, weights = _simpson(c)
        scale = st / root_d
        inv = 1 / math.sqrt(2 * math.pi)
        mass = []
        for z, w in zip(nodes, weights, strict=True):
            density = 0.0
            for u, m in zip(self.nodes, self.mass, strict=True):
                x = (z * st - u * sp) / root_d
                density += m * math.exp(-0.5 * x * x)
            mass.append(w * density * scale * inv)
        self.t, self.nodes, self.mass = t, nodes, mass

    def total(self) -> float:
        return sum(self.mass)


def crossing_probabilities(fractions: Sequence[float], bounds: Sequence[float]) -> list[float]:
    """P(first |Z| ≥ c at look r) for each look, when nothing changed (canonical joint distribution).

    Args:
        fractions: increasing information fractions in (0, 1].
        bounds: the nominal |z| boundary of each look.

    Returns:
        One probability per look; their sum is the overall two-sided type-I error.

    Raises:
        ValueError: lengths differ, fractions not increasing in (0, 1], a boundary ≤ 0.
    """
    _check_fractions(fractions)
    if len(bounds) != len(fractions) or min(bounds) <= 0:
        raise ValueError("one positive boundary per look is needed")
    out = [2 * (1 - _N.cdf(bounds[0]))]
    path = _Path(fractions[0], bounds[0])
    for t, c in zip(fractions[1:], bounds[1:], strict=True):
        before = path.total()
        out.append(before - path.stay(t, c))
        path.advance(t, c)
    return out


@lru_cache(maxsize=64)
def boundaries(fractions: tuple[float, ...], alpha: float = 0.05) -> tuple[float, ...]:
    """The nominal two-sided |z| boundary of each look under :func:`obf_spending`.

    Args:
        fractions: increasing information fractions in (0, 1]; the last is normally 1.
        alpha: overall two-sided type-I error, in (0, 1).

    Returns:
        One boundary per look (the z a look's statistic must reach in absolute value).

    Raises:
        ValueError: fractions not increasing in (0, 1], alpha outside (0, 1).
    """
    _check_fractions(fractions)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    spend = [obf_spending(t, alpha) for t in fractions]
    first = spend[0]
    bounds = [_N.inv_cdf(1 - first / 2) if first > 2 * (1 - _N.cdf(MAX_BOUNDARY)) else MAX_BOUNDARY]
    path = _Path(fractions[0], bounds[0])
    for r in range(1, len(fractions)):
        t, target = fractions[r], spend[r] - spend[r - 1]
        before = path.total()
        if before - path.stay(t, MAX_BOUNDARY) >= target:
            c = MAX_BOUNDARY
        else:
            lo, hi = 0.0, MAX_BOUNDARY
            for _ in range(50):  # crossing probability falls as c rises
                mid = (lo + hi) / 2
                if before - path.stay(t, mid) > target:
                    lo = mid
                else:
                    hi = mid
            c = hi
        bounds.append(c)
        path.advance(t, c)
    return tuple(bounds)


def _check_fractions(fractions: Sequence[float]) -> None:
    if not fractions or fractions[0] <= 0 or fractions[-1] > 1 + 1e-12 or any(
            b <= a for a, b in zip(fractions, fractions[1:], strict=False)):
        raise ValueError(f"information fractions must increase within (0, 1], got {list(fractions)!r}")


@dataclass(frozen=True)
class TaskCounts:
    """Passes and judged runs of one task on each side."""

    passes_base: int
    judged_base: int
    passes_cand: int
    judged_cand: int


@dataclass(frozen=True)
class Statistic:
    """The stratified statistic of one look.

    ``delta``: D, cand − base (fraction); ``z``: D over its standard error under no
    difference (0 when that error is 0); ``se``: the standard error of D for its
    repeated interval (module docstring); ``tasks``: tasks with judged runs on both sides.
    """

    delta: float
    z: float
    se: float
    tasks: int


def stratified_statistic(counts: Sequence[TaskCounts]) -> Statistic:
    """The statistic of one look over the tasks with judged runs on both sides (module docstring).

    Raises:
        ValueError: no task has judged runs on both sides, or passes exceed judged runs.
    """
    paired = [c for c in counts if c.judged_base > 0 and c.judged_cand > 0]
    if not paired:
        raise ValueError("no task has judged runs on both sides")
    delta = null_var = var = 0.0
    for c in paired:
        if not (0 <= c.passes_base <= c.judged_base and 0 <= c.passes_cand <= c.judged_cand):
            raise ValueError(f"passes must lie within the judged runs, got {c!r}")
        pb, pc = c.passes_base / c.judged_base, c.passes_cand / c.judged_cand
        delta += pc - pb
        runs = c.judged_base + c.judged_cand
        pooled = (c.passes_base + c.passes_cand) / runs
        if runs > 1:  # the hypergeometric (permutation) variance given the task's passes: N / (N − 1)
            null_var += pooled * (1 - pooled) * (1 / c.judged_base + 1 / c.judged_cand) * runs / (runs - 1)
        var += rate_variance(c.passes_base, c.judged_base) + rate_variance(c.passes_cand, c.judged_cand)
    t = len(paired)
    delta /= t
    z = delta / (math.sqrt(null_var) / t) if null_var > 0 else 0.0
    return Statistic(delta=delta, z=z, se=math.sqrt(var) / t, tasks=t)


def decide(stat: Statistic, boundary: float, tolerance: float, *, last: bool) -> tuple[Decision, str]:
    """The decision of one look (module docstring) and a one-line reason.

    Args:
        stat: the look's statistic; boundary: its nominal |z| boundary;
        tolerance: the smallest change that matters, a fraction in [0, 1);
        last: whether this is the last look (k reached).
    """
    lo, hi = repeated_interval(stat, boundary)
    points = f"{100 * stat.delta:+.1f} points, z = {stat.z:+.2f}, boundary ±{boundary:.2f}"
    crossed = abs(stat.z) >= boundary
    if crossed and stat.delta < 0:
        return "regressed", f"the boundary was crossed downwards ({points})"
    if crossed and stat.delta > tolerance:
        return "improved", f"the boundary was crossed upwards beyond the tolerance ({points})"
    band = f"±{100 * tolerance:.1f}"
    if -tolerance < lo and hi < tolerance:
        return "unchanged", (f"the repeated 95% interval [{100 * lo:+.1f}, {100 * hi:+.1f}] points lies inside "
                             f"the tolerance {band} ({points})")
    if last:
        return "inconclusive", (f"k reached without a decision: the boundary was not crossed and the repeated "
                                f"interval [{100 * lo:+.1f}, {100 * hi:+.1f}] points is not inside {band} ({points})")
    return "continue", f"not decided yet ({points})"


def repeated_interval(stat: Statistic, boundary: float) -> tuple[float, float]:
    """The repeated confidence interval ``D ± boundary · SE``, clipped to [−1, 1]."""
    half = boundary * stat.se
    return max(-1.0, stat.delta - half), min(1.0, stat.delta + half)
