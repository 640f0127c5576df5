"""Deltas of the per-success figures between two reports (SPEC K3).

Figures, each read from the report and absent when the report lacks it:

- ``tokensPerSuccess`` (tokens): ``measured.tokensPerSuccess`` — all judged
  spend (main loop, input + output) divided by the successes;
- ``totalTokensPerSuccess`` (tokens): ``measured.totalTokensPerSuccess`` —
  the same with the compaction calls' tokens added: the whole spend, so it
  *is* comparable across compaction settings (a compaction A/B is judged on it);
- ``wallMsPerSuccess`` (ms): ``measured.wallMsPerSuccess``;
- ``cachedInputRatio`` (ratio): ``summary.cachedInput.ratio`` (also read from
  ``measured.cachedInput`` or a top-level ``cachedInput`` block);
- ``costUsdPerSuccess`` (USD, estimated): ``estimated.costUsdPerSuccess``, or
  ``estimated.costUsd`` / ``summary.passes``.

The two token figures carry ``relative95``: a 95 % interval of the relative
change cand/base − 1, from the runs' tokens (``runs[]``) by the delta method
for a ratio of means on each side (tokens per success = mean tokens per run /
mean successes per run; W. G. Cochran (1977), *Sampling Techniques*, §6.3),
the two sides independent, on the log scale. Absent when a side has no
success or a run without known tokens.

Not comparable: different modes (every figure); different or unknown
compaction settings (main-loop token figures: tokens, cached input, cost; the
header ``compaction`` block, equal when absent from both); different rates
(cost); runs made with a different ``jobs``, under different sandbox backends, or on different machines (the
header ``execution`` block, equal when absent from both), for wall time.
"""

from __future__ import annotations

import json
import math
from typing import Any

DELTA_FIGURES = (  # name, unit, token-based (not comparable across compaction settings)
    ("tokensPerSuccess", "tokens", True),
    ("totalTokensPerSuccess", "tokens", False),
    ("wallMsPerSuccess", "ms", False),
    ("cachedInputRatio", "ratio", True),
    ("costUsdPerSuccess", "USD", True),
)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _figures(doc: dict[str, Any]) -> dict[str, float]:
    """The K3 figures a report carries; a figure it does not carry is absent (never 0)."""
    measured = doc.get("measured") or {}
    out: dict[str, float] = {}
    for key in ("tokensPerSuccess", "totalTokensPerSuccess", "wallMsPerSuccess"):
        value = _number(measured.get(key))
        if value is not None:
            out[key] = value
    for holder in (measured, doc.get("summary") or {}, doc):
        ratio = _number((holder.get("cachedInput") or {}).get("ratio"))
        if ratio is not None:
            out["cachedInputRatio"] = ratio
            break
    estimated = doc.get("estimated") or {}
    cost = _number(estimated.get("costUsdPerSuccess"))
    total, passes = _number(estimated.get("costUsd")), int((doc.get("summary") or {}).get("passes") or 0)
    if cost is None and total is not None and passes > 0:
        cost = total / passes  # reports that carry only the total
    if cost is not None:
        out["costUsdPerSuccess"] = cost
    return out


def _rates(doc: dict[str, Any]) -> Any:
    """The USD rates a report's cost was estimated with (``estimated.rates``, else ``header.rates``)."""
    return (doc.get("estimated") or {}).get("rates") or doc["header"].get("rates")


def _compaction_reason(hb: dict[str, Any], hc: dict[str, Any]) -> str | None:
    cb, cc = hb.get("compaction"), hc.get("compaction")
    if cb == cc:
        return None
    if cb is None or cc is None:
        return f"compaction settings unknown for {'base' if cb is None else 'cand'}"
    if isinstance(cb, dict) and isinstance(cc, dict):  # name the settings that differ, in JSON
        differ = "; ".join(f"{key}: base {json.dumps(cb.get(key))}, cand {json.dumps(cc.get(key))}"
                           for key in sorted(set(cb) | set(cc)) if cb.get(key) != cc.get(key))
        return f"different compaction settings ({differ})"
    return f"different compaction settings (base {json.dumps(cb)}, cand {json.dumps(cc)})"


def _execution_reason(hb: dict[str, Any], hc: dict[str, Any]) -> str | None:
    """Why wall times of the two reports cannot be compared, or None.

    The conditions are the ones the runs were made under (``header.execution``,
    derived from the run records); a side whose runs were made under mixed
    conditions is compared with nothing.
    """
    eb, ec = hb.get("execution"), hc.get("execution")
    sandbox_b = (eb or {}).get("sandbox") or hb.get("sandbox")
    sandbox_c = (ec or {}).get("sandbox") or hc.get("sandbox")
    for side, found in (("base", eb), ("cand", ec)):
        block: dict[str, Any] = found or {}
        mixed = [key for key, value in block.items() if isinstance(value, dict) and "mixed" in value]
        if mixed:
            which = ", ".join(f"{key} {block[key]['mixed']}" for key in mixed)
            return f"{side} runs made under mixed conditions ({which})"
    if sandbox_b != sandbox_c:  # a sandboxed command pays for its namespaces and mounts
        return f"runs made under different sandbox backends (base {sandbox_b}, cand {sandbox_c})"
    eb, ec = (None if e is None else {"executor": "local", **e} for e in (eb, ec))  # absent: local
    if eb == ec:
        return None
    if eb is None or ec is None:
        return f"execution conditions unknown for {'base' if eb is None else 'cand'}"
    if eb.get("jobs") != ec.get("jobs"):
        return f"runs made with different jobs (base {eb.get('jobs')}, cand {ec.get('jobs')})"
    if eb.get("machine") != ec.get("machine"):
        return "runs made on different machines"
    if eb.get("executor") != ec.get("executor"):
        return f"runs made with different executors (base {eb.get('executor')}, cand {ec.get('executor')})"
    return None


def deltas(base: dict[str, Any], cand: dict[str, Any], *, same_mode: bool) -> dict[str, Any]:
    """The K3 deltas, by figure name (``DELTA_FIGURES`` order).

    Args:
        base, cand: report documents of the same suite version.
        same_mode: whether both reports have the same mode (else nothing is comparable).

    Returns:
        ``{name: {"unit", ["base"], ["cand"], "comparable", ["reason"] | ["delta", ["relative"]]}}``
        for every figure at least one report carries; ``delta`` = cand − base in
        the unit, ``relative`` = delta / base (absent when base is 0). A side
        that lacks the figure has no key (never 0).
    """
    fb, fc = _figures(base), _figures(cand)
    compaction = _compaction_reason(base["header"], cand["header"])
    execution = _execution_reason(base["header"], cand["header"])
    rates_b, rates_c = _rates(base), _rates(cand)
    out: dict[str, Any] = {}
    for name, unit, token_based in DELTA_FIGURES:
        if name not in fb and name not in fc:
            continue
        entry: dict[str, Any] = {"unit": unit}
        entry.update({side: f[name] for side, f in (("base", fb), ("cand", fc)) if name in f})
        reason = None
        if name not in fb or name not in fc:
            reason = f"absent from the {'base' if name not in fb else 'cand'} report"
        elif not same_mode:
            reason = "different modes"
        elif token_based and compaction:
            reason = compaction
        elif name == "wallMsPerSuccess" and execution:
            reason = execution
        elif name == "costUsdPerSuccess" and rates_b != rates_c:
            reason = "different rates"
        entry["comparable"] = reason is None
        if reason is not None:
            entry["reason"] = reason
        else:
            entry["delta"] = fc[name] - fb[name]
            if fb[name] != 0:
                entry["relative"] = (fc[name] - fb[name]) / fb[name]
            if name in RUN_TOKENS:
                bounds = relative_interval(base.get("runs") or [], cand.get("runs") or [], RUN_TOKENS[name])
                if bounds is not None:
                    entry["relative95"] = list(bounds)
        if name == "totalTokensPerSuccess":
            entry["includes"] = "main loop and compaction calls"
        out[name] = entry
    return out


RUN_TOKENS = {"tokensPerSuccess": ("inputTokens", "outputTokens"),
              "totalTokensPerSuccess": ("inputTokens", "outputTokens", "compactionTokens")}
"""The run-line keys summed into one run's tokens, per figure."""
JUDGED = ("pass", "fail", "budget_exceeded")


def _log_ratio(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> tuple[float, float] | None:
    """log(tokens per success) of one side and its delta-method variance; None when undefined."""
    tokens, wins = [], []
    for run in runs:
        if run.get("status") not in JUDGED:
            continue
        if any(run.get(key) is None for key in keys):
            return None
        tokens.append(float(sum(run[key] for key in keys)))
        wins.append(1.0 if run["status"] == "pass" else 0.0)
    n = len(tokens)
    if n < 2 or not sum(wins) or not sum(tokens):
        return None
    mt, mw = sum(tokens) / n, sum(wins) / n
    st = sum((t - mt) ** 2 for t in tokens) / (n - 1)
    sw = sum((w - mw) ** 2 for w in wins) / (n - 1)
    stw = sum((t - mt) * (w - mw) for t, w in zip(tokens, wins, strict=True)) / (n - 1)
    var = (st / mt ** 2 + sw / mw ** 2 - 2 * stw / (mt * mw)) / n
    return math.log(mt / mw), max(var, 0.0)


def relative_interval(base_runs: list[dict[str, Any]], cand_runs: list[dict[str, Any]],
                      keys: tuple[str, ...], z: float = 1.959963984540054) -> tuple[float, float] | None:
    """95 % interval of (cand tokens per success) / (base tokens per success) − 1, or None.

    Delta method on log(mean tokens / mean successes) per side (Cochran 1977, §6.3), sides independent.
    """
    b, c = _log_ratio(base_runs, keys), _log_ratio(cand_runs, keys)
    if b is None or c is None:
        return None
    centre, half = c[0] - b[0], z * math.sqrt(b[1] + c[1])
    return math.exp(centre - half) - 1, math.exp(centre + half) - 1
