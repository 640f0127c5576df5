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
- ``compactionTokens``: input + output tokens of the compaction calls
  (``compactionUsage``; 0 for a run without compaction), and
  ``totalTokensPerSuccess`` = (main-loop tokens + compaction tokens) /
  passes — the whole spend per success, comparable across compaction
  settings; both present only when main usage is complete and every run
  with compaction calls reported their usage.
- ``cacheWriteTokens`` (with ``runsReportingCacheWrites``) and
  ``providerCostUsd`` (the provider's own cost figure, with
  ``runsReportingProviderCost``): sums over the judged runs that report
  them; present only when at least one does (absent is not zero).
- ``tasks``: the same figures per task (tasks with ≥ 1 judged run), plus
  the spread of each run's figures: ``tokensPerRun`` (input + output tokens,
  only when every judged run of the task reported usage) and ``wallMsPerRun``
  (over the judged runs with a wall time), each {runs, min, q1, median, q3,
  max, exact} (:class:`lab.report.distribution.Distribution`: exact
  quartiles up to 10 000 runs, a 1 % sketch beyond).

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

Each figure is a tally fed one run at a time (:class:`Figures`,
:class:`CachedInput`, :class:`Cost`), in report order, so a report of any
size is computed in one pass. What a tally keeps per run is one number for
the exact median and variance of wall times (8 bytes) and, for the float
sums whose last bit depends on the order of addition (provider cost), the
figures themselves; lists of runs (``runsMissingUsage``) go to a spool.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Callable, Iterable
from typing import Any

from lab.report.distribution import Distribution

JUDGED = frozenset({"pass", "fail", "budget_exceeded"})
NewList = Callable[[], Any]
"""Makes the list a tally appends run references to: ``list`` or a :class:`lab.report.spool.Spool` factory."""


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


def compaction_tokens_of(record: dict[str, Any]) -> int | None:
    """Input + output tokens of a run's compaction calls: 0 without any, None when calls were made
    but their usage is unknown."""
    usage = record.get("compactionUsage")
    if usage is not None and usage.get("inputTokens") is not None and usage.get("outputTokens") is not None:
        return int(usage["inputTokens"]) + int(usage["outputTokens"])
    return 0 if not int(record.get("compactions") or 0) else None


class Figures:
    """The measured figures (M4) of one scope (every judged run, or one task's), fed one judged run at a time.

    Args:
        new_list: makes the list of runs without usage (``list`` or a spool factory).
        spread: also summarise the per-run tokens and wall times (a task's
            scope: ``tokensPerRun``, ``wallMsPerRun``).
    """

    def __init__(self, new_list: NewList = list, spread: bool = False) -> None:
        self.judged = self.passes = self.wall_sum = 0
        self.walls = array("q")  # judged wall times, for the exact median and variance
        self.missing = new_list()  # {taskId, repetition} of judged runs without usage
        self.tokens_in = self.tokens_out = self.turns = self.tool_calls = self.compactions = 0
        self.writes = self.writes_runs = 0
        self.compaction_tokens, self.compaction_unknown = 0, False
        self.costs: list[Any] = []  # provider-reported costs as given: their float sum depends on order
        self.spread = (Distribution(), Distribution()) if spread else None  # tokens, wall ms per run

    def add(self, record: dict[str, Any]) -> None:
        """Count one judged run."""
        self.judged += 1
        self.passes += record["status"] == "pass"
        if record.get("wallMs") is not None:
            wall = int(record["wallMs"])
            self.walls.append(wall)
            self.wall_sum += wall
            if self.spread is not None:
                self.spread[1].add(wall)
        self.turns += int(record.get("turns") or 0)
        self.tool_calls += int(record.get("toolCalls") or 0)
        self.compactions += int(record.get("compactions") or 0)
        spent = compaction_tokens_of(record)
        if spent is None:
            self.compaction_unknown = True
        else:
            self.compaction_tokens += spent
        usage = usage_of(record)
        if usage is None:
            self.missing.append({"taskId": record["taskId"], "repetition": record["repetition"]})
            return
        self.tokens_in += int(usage["inputTokens"])
        self.tokens_out += int(usage["outputTokens"])
        if self.spread is not None:
            self.spread[0].add(int(usage["inputTokens"]) + int(usage["outputTokens"]))
        if usage.get("cacheWriteTokens") is not None:
            self.writes += usage["cacheWriteTokens"]
            self.writes_runs += 1
        if usage.get("providerCostUsd") is not None:
            self.costs.append(usage["providerCostUsd"])

    def block(self) -> dict[str, Any]:
        """The figures: runsJudged, usage completeness, tokens (when complete), wall time, event counts."""
        judged, passes, walls = self.judged, self.passes, self.walls
        block: dict[str, Any] = {
            "runsJudged": judged, "runsReportingUsage": judged - len(self.missing),
            "usageIncomplete": bool(self.missing), "runsMissingUsage": self.missing,
            "wallMsMedian": float(statistics.median(walls)) if walls else None,
            "wallMsVariance": float(statistics.variance(walls)) if len(walls) > 1 else None,
            "wallMsPerSuccess": self.wall_sum / passes if passes and len(walls) == judged else None,
            "turns": self.turns, "toolCalls": self.tool_calls, "compactions": self.compactions,
        }
        if not self.missing:
            tokens = self.tokens_in + self.tokens_out
            block.update(inputTokens=self.tokens_in, outputTokens=self.tokens_out,
                         tokensPerAttempt=tokens / judged, tokensPerSuccess=tokens / passes if passes else None)
            if not self.compaction_unknown:
                total = tokens + self.compaction_tokens
                block.update(compactionTokens=self.compaction_tokens,
                             totalTokensPerSuccess=total / passes if passes else None)
        if self.writes_runs:  # shown only when some run reports it; a sum over the reporting runs
            block.update(cacheWriteTokens=int(self.writes), runsReportingCacheWrites=self.writes_runs)
        if self.costs:
            block.update(providerCostUsd=round(float(sum(self.costs)), 12), runsReportingProviderCost=len(self.costs))
        if self.spread is not None:
            per_run = (d.summary() for d in self.spread)
            tokens_per_run, wall_per_run = per_run
            if tokens_per_run is not None and not self.missing:
                block["tokensPerRun"] = tokens_per_run
            if wall_per_run is not None:
                block["wallMsPerRun"] = wall_per_run
        return block


class CachedInput:
    """``summary.cachedInput`` (M5) of one scope, fed one judged run at a time."""

    def __init__(self) -> None:
        self.judged = self.reporting = self.partial = self.tokens = self.tokens_in = 0

    def add(self, record: dict[str, Any]) -> None:
        """Count one judged run."""
        self.judged += 1
        if (record.get("usage") or {}).get("cachedPartial"):
            self.partial += 1
        cached = cached_tokens_of(record)
        if cached is not None:
            self.reporting += 1
            self.tokens += cached
            self.tokens_in += int(record["usage"]["inputTokens"])

    def block(self) -> dict[str, Any]:
        """{tokens, inputTokens, ratio, runsReporting, runsPartial, runsJudged}."""
        tokens = self.tokens if self.reporting else None
        tokens_in = self.tokens_in if self.reporting else None
        ratio = tokens / tokens_in if tokens is not None and tokens_in else None
        assert ratio is None or 0 <= ratio <= 1, f"cached input share {ratio} outside [0, 1]"
        return {"tokens": tokens, "inputTokens": tokens_in, "ratio": ratio,
                "runsReporting": self.reporting, "runsPartial": self.partial, "runsJudged": self.judged}


def cached_input(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``summary.cachedInput`` (M5) over the judged runs of ``records``."""
    tally = CachedInput()
    for record in records:
        if is_judged(record):
            tally.add(record)
    return tally.block()


def priced_rates(rates: dict[str, Any]) -> dict[str, float]:
    """The rates given (not None) among input, output, cached_input and cache_write, as floats."""
    return {key: float(rates[key]) for key in ("input", "output", "cached_input", "cache_write")
            if rates.get(key) is not None}


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


class Cost:
    """The estimated cost (M6) of one scope at ``rates`` (:func:`priced_rates`), fed one judged run at a time."""

    def __init__(self, rates: dict[str, float]) -> None:
        self.rates = rates
        self.judged = self.passes = 0
        self.classes = [0, 0, 0, 0]  # token sums: plain input, cached input, cache writes, output

    def add(self, record: dict[str, Any]) -> None:
        """Count one judged run (its tokens when it reported usage)."""
        self.judged += 1
        self.passes += record["status"] == "pass"
        usage = usage_of(record)
        if usage is not None:
            for i, tokens in enumerate(_token_classes(usage, self.rates)):
                self.classes[i] += tokens

    def figures(self) -> dict[str, Any]:
        """{costUsd, costUsdPerAttempt, costUsdPerSuccess} (USD; per success null with no pass)."""
        rates = self.rates
        plain, cached, writes, out = self.classes
        cost = (plain * rates["input"] + cached * rates.get("cached_input", 0.0)
                + writes * rates.get("cache_write", 0.0) + out * rates["output"]) / 1e6
        return {"costUsd": cost, "costUsdPerAttempt": cost / self.judged,
                "costUsdPerSuccess": cost / self.passes if self.passes else None}


def rates_block(rates: dict[str, Any]) -> dict[str, Any]:
    """``estimated.rates``: the input and output rates as configured, the cache rates when given."""
    priced = priced_rates(rates)
    block = {"inputUsdPerMTok": rates.get("input"), "outputUsdPerMTok": rates.get("output")}
    for key, name in (("cached_input", "cachedInputUsdPerMTok"), ("cache_write", "cacheWriteUsdPerMTok")):
        if key in priced:
            block[name] = priced[key]
    return block
