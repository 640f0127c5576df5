"""Deltas of the per-success figures between two reports (SPEC K3).

Figures, each read from the report and absent when the report lacks it:

- ``tokensPerSuccess`` (tokens): ``measured.tokensPerSuccess`` — all judged
  spend (main loop, input + output) divided by the successes;
- ``wallMsPerSuccess`` (ms): ``measured.wallMsPerSuccess``;
- ``cachedInputRatio`` (ratio): ``summary.cachedInput.ratio`` (also read from
  ``measured.cachedInput`` or a top-level ``cachedInput`` block);
- ``costUsdPerSuccess`` (USD, estimated): ``estimated.costUsdPerSuccess``, or
  ``estimated.costUsd`` / ``summary.passes``.

Not comparable: different modes (every figure); different or unknown
compaction settings (token-based figures: tokens, cached input, cost; the
header ``compaction`` block, equal when absent from both); different rates
(cost); runs made with a different ``jobs``, under different sandbox backends, or on different machines (the
header ``execution`` block, equal when absent from both), for wall time.
"""

from __future__ import annotations

from typing import Any

DELTA_FIGURES = (  # name, unit, token-based (not comparable across compaction settings)
    ("tokensPerSuccess", "tokens", True),
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
    for key in ("tokensPerSuccess", "wallMsPerSuccess"):
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
    return f"different compaction settings (base {cb}, cand {cc})"


def _execution_reason(hb: dict[str, Any], hc: dict[str, Any]) -> str | None:
    """Why wall times of the two reports cannot be compared, or None."""
    if hb.get("sandbox") != hc.get("sandbox"):  # a sandboxed command pays for its namespaces and mounts
        return f"runs made under different sandbox backends (base {hb.get('sandbox')}, cand {hc.get('sandbox')})"
    eb, ec = hb.get("execution"), hc.get("execution")
    eb, ec = (None if e is None else {"executor": "local", **e} for e in (eb, ec))  # absent: local
    if eb == ec:
        return None
    if eb is None or ec is None:
        return f"execution conditions unknown for {'base' if eb is None else 'cand'}"
    if eb.get("jobs") != ec.get("jobs"):
        return f"runs made with different jobs (base {eb.get('jobs')}, cand {ec.get('jobs')})"
    if eb["executor"] != ec["executor"]:
        return f"runs made with different executors (base {eb['executor']}, cand {ec['executor']})"
    return "runs made on different machines"


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
        out[name] = entry
    return out
