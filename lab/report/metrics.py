"""Measured and estimated figures of a report (SPEC M4, M5, M6).

*Measured* figures come from the run records as observed: provider-reported
usage of the main loop (``record["usage"]``; compaction calls are counted
apart in ``compactionUsage`` and never included) and wall time. *Estimated*
figures are USD costs computed from user-given rates. The two live in
separate blocks and are never added together. A figure that is not known is
absent (or null where a key must exist), never 0 and never guessed.

Measured block (``measured``; absent when no run was judged), over judged runs:

- ``runsJudged``; ``runsReportingUsage``: judged runs whose record carries
  main-loop input and output tokens; ``usageIncomplete`` = some judged run
  lacks them, listed in ``runsMissingUsage`` [{taskId, repetition}].
- ``inputTokens``, ``outputTokens``: sums over judged runs; present only when
  usage is complete (``usageIncomplete`` false).
- ``tokensPerAttempt`` = (input + output) / runsJudged;
  ``tokensPerSuccess`` = (input + output) / passes — the spend of *all*
  judged runs, failures included, divided by the successes; null with no pass.
- ``wallMsMedian``; ``wallMsVariance``: sample variance (n − 1 denominator),
  null with fewer than 2 runs; ``wallMsPerSuccess`` = sum of judged wall
  times / passes, null with no pass.
- ``turns``, ``toolCalls``, ``compactions``: event counts summed over judged runs.
- ``cacheWriteTokens`` (with ``runsReportingCacheWrites``) and
  ``providerCostUsd`` (the provider's own cost figure, with
  ``runsReportingProviderCost``): sums over the judged runs that report
  them; present only when at least one does (absent is not zero).
- ``tasks``: the same figures per task (tasks with ≥ 1 judged run).

Cached input (``summary.cachedInput``, M5), over judged runs:

- a run *reports* cached input when its usage is known and every main turn
  reported ``cachedInputTokens``; a run where only some turns did is
  ``cachedPartial`` and left out (``runsPartial``).
- ``tokens`` = sum of cached input tokens and ``inputTokens`` = sum of input
  tokens, both over reporting runs only (null when none reports);
  ``ratio`` = tokens / inputTokens (null when undefined), in [0, 1] by
  construction (a record whose cached input exceeds its input does not report);
  ``runsReporting``, ``runsPartial``, ``runsJudged``. Per task:
  ``tasks[].cachedInputRatio``.

Estimated block (``estimated``, M6): present only when both ``rates.input``
and ``rates.output`` (USD per million tokens) are given *and* measured usage
is complete. ``costUsd`` = (plain input × rates.input + cached input ×
rates.cached_input + cache writes × rates.cache_write + outputTokens ×
rates.output) / 10⁶, per run; a class whose rate is not given, or that the
run does not report, is priced at the input rate (plain input = input minus
the classes priced apart); ``costUsdPerAttempt`` = costUsd / runsJudged; ``costUsdPerSuccess`` =
costUsd / passes (null with no pass); ``tasks`` per task.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

JUDGED = frozenset({"pass", "fail", "budget_exceeded"})
TaskGroups = list[tuple[str, list[dict[str, Any]]]]


def is_judged(record: dict[str, Any]) -> bool:
    """Status pass, fail or budget_exceeded (errored runs are never judged)."""
    return record["status"] in JUDGED


def claimed_success(record: dict[str, Any]) -> bool:
    """Whether the agent claimed success (X2), read against the task's expected outcome.

    A task whose correct outcome is a refusal (suite.json ``expectedOutcome:
    "refusal"``, copied into the record) is claimed done by giving up
    (claim ``gave_up``); any other task by claiming success (``DONE``). A
    record without ``expectedOutcome`` is read as ``success``.
    """
    expected = "gave_up" if record.get("expectedOutcome") == "refusal" else "success"
    return record.get("claim") == expected


def usage_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """The run's main-loop usage when input and output tokens were reported, else None."""
    usage = record.get("usage")
    if not usage or usage.get("inputTokens") is None or usage.get("outputTokens") is None:
        return None
    return dict(usage)


def cached_tokens_of(record: dict[str, Any]) -> int | None:
    """Cached input tokens when every main turn reported them (not ``cachedPartial``), else None.

    A record whose cached input exceeds its input (written before the usage
    reader knew Anthropic semantics) does not report cached input: a share
    above 100 % is impossible.
    """
    usage = usage_of(record)
    if usage is None or usage.get("cachedPartial") or usage.get("cachedInputTokens") is None:
        return None
    cached = int(usage["cachedInputTokens"])
    return cached if cached <= int(usage["inputTokens"]) else None


def _reported_sum(usages: list[dict[str, Any]], key: str) -> tuple[float, int]:
    """(sum, runs reporting) of one optional usage figure over runs with known usage."""
    figures = [u[key] for u in usages if u.get(key) is not None]
    return sum(figures), len(figures)


def _figures(judged: list[dict[str, Any]]) -> dict[str, Any]:
    """Measured figures of one scope (all judged runs, or one task's)."""
    passes = sum(1 for r in judged if r["status"] == "pass")
    walls = [int(r["wallMs"]) for r in judged if r.get("wallMs") is not None]
    usages = [usage_of(r) for r in judged]
    missing = [r for r, u in zip(judged, usages) if u is None]
    block: dict[str, Any] = {
        "runsJudged": len(judged), "runsReportingUsage": len(judged) - len(missing),
        "usageIncomplete": bool(missing),
        "runsMissingUsage": [{"taskId": r["taskId"], "repetition": r["repetition"]} for r in missing],
        "wallMsMedian": float(statistics.median(walls)) if walls else None,
        "wallMsVariance": float(statistics.variance(walls)) if len(walls) > 1 else None,
        "wallMsPerSuccess": sum(walls) / passes if passes and len(walls) == len(judged) else None,
        "turns": sum(int(r.get("turns") or 0) for r in judged),
        "toolCalls": sum(int(r.get("toolCalls") or 0) for r in judged),
        "compactions": sum(int(r.get("compactions") or 0) for r in judged),
    }
    if not missing:
        tokens_in = sum(int(u["inputTokens"]) for u in usages if u is not None)
        tokens_out = sum(int(u["outputTokens"]) for u in usages if u is not None)
        block.update(inputTokens=tokens_in, outputTokens=tokens_out,
                     tokensPerAttempt=(tokens_in + tokens_out) / len(judged),
                     tokensPerSuccess=(tokens_in + tokens_out) / passes if passes else None)
    known = [u for u in usages if u is not None]
    writes, writes_runs = _reported_sum(known, "cacheWriteTokens")
    if writes_runs:  # shown only when some run reports it; a sum over the reporting runs
        block.update(cacheWriteTokens=int(writes), runsReportingCacheWrites=writes_runs)
    cost, cost_runs = _reported_sum(known, "providerCostUsd")
    if cost_runs:
        block.update(providerCostUsd=round(float(cost), 12), runsReportingProviderCost=cost_runs)
    return block


def measured_block(records: list[dict[str, Any]], by_task: TaskGroups) -> dict[str, Any] | None:
    """The ``measured`` block (M4), or None when no run was judged.

    Args:
        records: every run record, in report order.
        by_task: (task id, its records) pairs in task order.
    """
    judged = [r for r in records if is_judged(r)]
    if not judged:
        return None
    block = _figures(judged)
    block["tasks"] = [{"taskId": task_id, **_figures(task_judged)} for task_id, runs in by_task
                      if (task_judged := [r for r in runs if is_judged(r)])]
    return block


def cached_input(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``summary.cachedInput`` (M5): {tokens, inputTokens, ratio, runsReporting, runsPartial, runsJudged}."""
    judged = [r for r in records if is_judged(r)]
    reporting = [(r, c) for r in judged if (c := cached_tokens_of(r)) is not None]
    partial = sum(1 for r in judged if (r.get("usage") or {}).get("cachedPartial"))
    tokens = sum(c for _, c in reporting) if reporting else None
    tokens_in = sum(int((r["usage"] or {})["inputTokens"]) for r, _ in reporting) if reporting else None
    ratio = tokens / tokens_in if tokens is not None and tokens_in else None
    assert ratio is None or 0 <= ratio <= 1, f"cached input share {ratio} outside [0, 1]"
    return {"tokens": tokens, "inputTokens": tokens_in, "ratio": ratio,
            "runsReporting": len(reporting), "runsPartial": partial, "runsJudged": len(judged)}


def cached_input_ratio(runs: Iterable[dict[str, Any]]) -> float | None:
    """Cached / input tokens over the judged runs of ``runs`` that fully report cached input."""
    ratio = cached_input(runs)["ratio"]
    return None if ratio is None else float(ratio)


def _token_classes(usage: dict[str, Any], rates: dict[str, float]) -> tuple[int, int, int, int]:
    """(plain input, cached input, cache writes, output) of one run as priced.

    A class without its own rate, or not reported by the run, counts as plain input.
    """
    tokens_in, tokens_out = int(usage["inputTokens"]), int(usage["outputTokens"])
    cached = usage.get("cachedInputTokens") if not usage.get("cachedPartial") else None
    cached = int(cached) if cached is not None and "cached_input" in rates and int(cached) <= tokens_in else 0
    writes = usage.get("cacheWriteTokens")
    writes = int(writes) if writes is not None and "cache_write" in rates else 0
    writes = min(writes, tokens_in - cached)
    return tokens_in - cached - writes, cached, writes, tokens_out


def _cost(usages: list[dict[str, Any]], rates: dict[str, float]) -> float:
    plain, cached, writes, out = (sum(c) for c in zip(*(_token_classes(u, rates) for u in usages), strict=True)) \
        if usages else (0, 0, 0, 0)
    return (plain * rates["input"] + cached * rates.get("cached_input", 0.0)
            + writes * rates.get("cache_write", 0.0) + out * rates["output"]) / 1e6


def _cost_figures(judged: list[dict[str, Any]], rates: dict[str, float]) -> dict[str, Any]:
    usages = [u for r in judged if (u := usage_of(r)) is not None]
    cost = _cost(usages, rates)
    passes = sum(1 for r in judged if r["status"] == "pass")
    return {"costUsd": cost, "costUsdPerAttempt": cost / len(judged),
            "costUsdPerSuccess": cost / passes if passes else None}


def estimated_block(records: list[dict[str, Any]], by_task: TaskGroups,
                    rates: dict[str, Any]) -> dict[str, Any] | None:
    """The ``estimated`` block (M6), or None: needs both rates and complete usage.

    Args:
        records: every run record; by_task: (task id, records) pairs.
        rates: ``{"input", "output"}`` USD per 1M tokens, optionally ``"cached_input"`` and
            ``"cache_write"`` (USD per 1M cached-input / cache-write tokens).
    """
    rate_in, rate_out = rates.get("input"), rates.get("output")
    judged = [r for r in records if is_judged(r)]
    if rate_in is None or rate_out is None or not judged:
        return None
    if any(usage_of(r) is None for r in judged):
        return None
    priced = {key: float(rates[key]) for key in ("input", "output", "cached_input", "cache_write")
              if rates.get(key) is not None}
    block: dict[str, Any] = _cost_figures(judged, priced)
    block["rates"] = {"inputUsdPerMTok": rate_in, "outputUsdPerMTok": rate_out}
    for key, name in (("cached_input", "cachedInputUsdPerMTok"), ("cache_write", "cacheWriteUsdPerMTok")):
        if key in priced:
            block["rates"][name] = priced[key]
    block["tasks"] = [{"taskId": task_id, **_cost_figures(task_judged, priced)}
                      for task_id, runs in by_task if (task_judged := [r for r in runs if is_judged(r)])]
    return block
