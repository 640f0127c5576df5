"""Estimators for pass rates: Wilson score interval, pass@k and pass^k (with its interval).

Imports nothing from the lab but its errors; every estimator cites its source.
"""

from __future__ import annotations

import math

Z_95 = 1.959963984540054  # standard-normal 0.975 quantile


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Args:
        successes: judged runs that passed (0 <= successes <= trials).
        trials: judged runs (pass + fail + budget_exceeded); errored runs excluded.
        z: standard-normal quantile; the default gives a 95 % interval.

    Returns:
        (low, high), both in [0, 1]; exactly 0.0 at successes == 0 and
        exactly 1.0 at successes == trials.

    Raises:
        ValueError: trials < 1 or successes outside [0, trials]; echoes both.

    Source: E. B. Wilson (1927), "Probable inference, the law of succession,
    and statistical inference", JASA 22(158):209-212; matches statsmodels
    ``proportion_confint(method="wilson")``.
    """
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"wilson_interval: need 0 <= successes <= trials and trials >= 1, "
                         f"got successes={successes}, trials={trials}")
    p = successes / trials
    z2 = z * z
    denom = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k: P(at least one of k samples passes).

    Args:
        n: runs of the task; c: runs that passed (0 <= c <= n); k: 1 <= k.

    Returns:
        1 - C(n-c, k) / C(n, k) in [0, 1]; NaN when k > n (undefined).
        With k == n this is 1.0 when any run passed, else 0.0 (SPEC M2).

    Raises:
        ValueError: n < 1, k < 1, or c outside [0, n].

    Source: M. Chen et al. (2021), "Evaluating Large Language Models Trained
    on Code", arXiv:2107.03374, eq. 1.
    """
    _check(n, c, k)
    if k > n:
        return math.nan
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass^k: P(all of k samples pass).

    Args:
        n: runs of the task; c: runs that passed (0 <= c <= n); k: 1 <= k.

    Returns:
        C(c, k) / C(n, k) in [0, 1]; NaN when k > n (undefined).
        With k == n this is 1.0 only when every run passed (SPEC M2).

    Raises:
        ValueError: n < 1, k < 1, or c outside [0, n].

    Source: S. Yao et al. (2024), "tau-bench: A Benchmark for Tool-Agent-User
    Interaction in Real-World Domains", arXiv:2406.12045, sec. 4.
    """
    _check(n, c, k)
    if k > n:
        return math.nan
    return math.comb(c, k) / math.comb(n, k)


def pass_hat_k_interval(n: int, c: int, k: int, z: float = Z_95) -> tuple[float, float]:
    """95 % interval of pass^k = p^k: the Wilson interval of p raised to the k-th power.

    Args:
        n: judged runs of the task; c: runs that passed (0 <= c <= n); k: 1 <= k.

    Returns:
        (low**k, high**k) with (low, high) = :func:`wilson_interval` (c, n):
        p ↦ p^k is increasing on [0, 1], so the image of a 95 % interval of p
        is a 95 % interval of p^k (same coverage). It holds the estimate
        :func:`pass_hat_k` only approximately (that estimator is unbiased, the
        interval is for the true p^k).

    Raises:
        ValueError: n < 1, k < 1, or c outside [0, n].

    Sources: Wilson (1927) for the interval of p; the transformation
    (invariance of confidence intervals under monotone maps), e.g. G. Casella,
    R. L. Berger (2002), *Statistical Inference*, §9.2.
    """
    _check(n, c, k)
    low, high = wilson_interval(c, n, z)
    return low ** k, high ** k


def _check(n: int, c: int, k: int) -> None:
    if n < 1 or k < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1, k >= 1 and 0 <= c <= n, got n={n}, c={c}, k={k}")
