"""Plan a comparison from a baseline report: k, runs, cost and time (SPEC K8, ``lab plan``).

Given a baseline report (live or record mode: runs that vary), a target
change ``delta`` of the success rate, a power and α, :func:`plan_comparison`
says how many runs per task and variant (k) a comparison needs:

- for the suite: the task-weighted mean success rate (the aggregate of
  ``lab compare``), every task shifted by ``delta``
  (:func:`lab.compare.power.runs_per_task_for_difference`);
- per task: to detect ``delta`` on that task alone
  (:func:`lab.compare.power.task_runs_for_difference`);

(never fewer than 5, below which a comparison claims no direction, SPEC M3)

and what the suite plan costs: total runs = k × tasks × variants; expected
cost = runs × the baseline's estimated cost per judged run (only when the
baseline was priced, ``rates.input``/``rates.output``), else expected tokens =
runs × measured tokens per judged run; expected wall time = Σ over tasks of
k × variants × the task's median wall time per run, divided by ``jobs``
(runs at once; the time of the longest run is not modelled).

Rates are fractions; costs in USD; times in milliseconds.
"""

from __future__ import annotations

from typing import Any

from lab.errors import ConfigError
from lab.report.build import LOW_POWER_RUNS

PLAN_SCHEMA_VERSION = 1


def plan_comparison(report: dict[str, Any], delta: float, *, power: float = 0.8, alpha: float = 0.05,
                    variants: int = 2, jobs: int = 1) -> dict[str, Any]:
    """The plan document (``lab/schemas/plan.schema.json``) of a comparison against ``report``.

    Args:
        report: a report document (report.json).
        delta: the change to detect, a fraction in (0, 1) (0.10 = 10 points).
        power: the chance to detect it, in (0, 1); alpha: two-sided level, in (0, 1).
        variants: how many variants the comparison runs (≥ 2); jobs: runs at once (≥ 1).

    Returns:
        ``{schemaVersion, baseline, delta, power, alpha, variants, jobs, suite: {k, runs,
        detectableNow}, tasks: [{taskId, rate, judged, k, detectableNow}], excludedTasks,
        cost?, tokens?, wallMs?, notes}``.

    Raises:
        ConfigError: an argument out of range, a replay baseline (no run-to-run
            variance to plan from), or no task with judged runs.
    """
    from lab.compare import power as pw

    _check(delta, power, alpha, variants, jobs)
    header = report["header"]
    if header.get("mode") == "replay":
        raise ConfigError(f"baseline {header.get('runId')} is a replay: its runs repeat recorded answers, so it has "
                          "no run-to-run variance to plan from; plan from a live report")
    judged = [t for t in report["tasks"] if t["judged"] > 0]
    if not judged:
        raise ConfigError(f"baseline {header.get('runId')} has no judged run: nothing to plan from")
    rates = [float(t["successRate"]) for t in judged]
    needed = pw.runs_per_task_for_difference(rates, delta, alpha=alpha, power=power)
    k = max(needed, LOW_POWER_RUNS)
    counts = [int(t["judged"]) for t in judged]
    tasks = [{"taskId": t["taskId"], "rate": rate, "judged": n,
              "k": max(LOW_POWER_RUNS, pw.task_runs_for_difference(rate, delta, alpha=alpha, power=power)),
              "detectableNow": _finite(pw.task_detectable_difference(rate, n, n, alpha=alpha, power=power))}
             for t, rate, n in zip(judged, rates, counts, strict=True)]
    runs = k * len(judged) * variants
    doc: dict[str, Any] = {
        "schemaVersion": PLAN_SCHEMA_VERSION,
        "baseline": {key: header[key] for key in ("runId", "suiteId", "suiteVersion", "mode", "provider", "model",
                                                  "k") if key in header} | {"tasks": len(report["tasks"])},
        "delta": delta, "power": power, "alpha": alpha, "variants": variants, "jobs": jobs,
        "suite": {"k": k, "runs": runs,
                  "detectableNow": _finite(pw.aggregate_detectable_difference(rates, counts, counts, alpha=alpha,
                                                                              power=power))},
        "tasks": tasks, "excludedTasks": [t["taskId"] for t in report["tasks"] if t["judged"] == 0], "notes": []}
    if needed < LOW_POWER_RUNS:
        doc["notes"].append(f"the power formula asks for k = {needed}; k is raised to {LOW_POWER_RUNS}: below "
                            f"{LOW_POWER_RUNS} judged runs per task and side a comparison claims no direction")
    _costs(doc, report, runs)
    _wall(doc, report, judged, k * variants, jobs)
    return doc


def _check(delta: float, power: float, alpha: float, variants: int, jobs: int) -> None:
    for name, value in (("delta", delta), ("power", power), ("alpha", alpha)):
        if not 0 < value < 1:
            raise ConfigError(f"{name}: expected a number in (0, 1), got {value!r}")
    if power <= alpha:
        raise ConfigError(f"power ({power}) must exceed alpha ({alpha})")
    if variants < 2:
        raise ConfigError(f"variants: expected at least 2, got {variants}")
    if jobs < 1:
        raise ConfigError(f"jobs: expected at least 1, got {jobs}")


def _costs(doc: dict[str, Any], report: dict[str, Any], runs: int) -> None:
    """Expected cost (priced baseline) or tokens (unpriced) of ``runs`` runs."""
    measured = report.get("measured") or {}
    if "tokensPerAttempt" in measured:
        per_run = float(measured["tokensPerAttempt"])
        doc["tokens"] = {"perRun": per_run, "total": round(per_run * runs)}
    else:
        doc["notes"].append("the baseline's token usage is incomplete: no tokens or cost are expected")
    estimated = report.get("estimated")
    if estimated is not None:
        per_run = float(estimated["costUsdPerAttempt"])
        doc["cost"] = {"usdPerRun": per_run, "usd": per_run * runs, "rates": estimated["rates"]}
    elif "tokens" in doc:
        doc["notes"].append("the baseline has no rates (rates.input, rates.output): cost is not estimated, "
                            "tokens only")


def _wall(doc: dict[str, Any], report: dict[str, Any], judged: list[dict[str, Any]], per_task: int,
          jobs: int) -> None:
    """Expected wall time: each task's median wall time per run × its runs, over ``jobs``."""
    measured = report.get("measured") or {}
    medians = {t["taskId"]: t.get("wallMsMedian") for t in measured.get("tasks", [])}
    overall = measured.get("wallMsMedian")
    total = 0.0
    for task in judged:
        median = medians.get(task["taskId"]) or overall
        if median is None:
            doc["notes"].append("the baseline has no wall times per run: no time is expected")
            return
        total += per_task * float(median)
    doc["wallMs"] = {"total": total / jobs, "runsTotal": total}
    ran = (report["header"].get("execution") or {}).get("jobs")  # an int, {"mixed": [...]} or null
    counts = ran["mixed"] if isinstance(ran, dict) else [ran]
    most = max((int(n) for n in counts if isinstance(n, int)), default=1)
    if most > 1:
        shown = " to ".join(str(n) for n in sorted({min(counts), most})) if isinstance(ran, dict) else str(most)
        doc["notes"].append(f"the baseline ran {shown} runs at once: its times per run include that contention")


def render_plan(doc: dict[str, Any]) -> str:
    """The plan as text for the console (``lab plan`` without ``json=true``)."""
    base, suite = doc["baseline"], doc["suite"]
    variants, tasks = doc["variants"], len(doc["tasks"])
    lines = [f"plan from {base.get('runId')} ({base.get('suiteId')} {base.get('suiteVersion')}, {base.get('mode')}, "
             f"{base.get('provider')}/{base.get('model')}, k={base.get('k')}, {base['tasks']} tasks)",
             f"target: a change of {100 * doc['delta']:.1f} points in the success rate, power "
             f"{100 * doc['power']:.0f}%, two-sided α {doc['alpha']:g}, {variants} variants",
             f"suite (task-weighted mean success rate): k = {suite['k']} runs per task and variant → "
             f"{suite['runs']:,} runs ({suite['k']} × {tasks} tasks × {variants} variants); the baseline's own runs "
             f"detect {_points(suite['detectableNow'])}",
             "per task (k to detect the change on that task alone):",
             "",
             "| task | rate | judged | k | detects now |",
             "|---|---|---|---|---|"]
    lines += [f"| {t['taskId']} | {t['rate']:.2f} | {t['judged']} | {t['k']} | {_points(t['detectableNow'])} |"
              for t in doc["tasks"]]
    lines.append("")
    if "cost" in doc:
        lines.append(f"expected cost: ${doc['cost']['usd']:,.4f} ({suite['runs']:,} runs × "
                     f"${doc['cost']['usdPerRun']:.6f} estimated per run at the baseline's rates)")
    if "tokens" in doc:
        lines.append(f"expected tokens: {doc['tokens']['total']:,} ({suite['runs']:,} runs × "
                     f"{doc['tokens']['perRun']:,.0f} measured per run)")
    if "wallMs" in doc:
        lines.append(f"expected wall time: {_duration(doc['wallMs']['total'])} at jobs={doc['jobs']} (each task's "
                     f"median time per run × its runs)")
    if doc["excludedTasks"]:
        lines.append(f"left out (no judged run in the baseline): {', '.join(doc['excludedTasks'])}")
    lines += [f"note: {note}" for note in doc["notes"]]
    return "\n".join(lines) + "\n"


def _duration(ms: float) -> str:
    seconds = round(ms / 1000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{ms / 1000:.1f} s"


def _finite(change: float) -> float | None:
    """A detectable change as a rate difference, or None when no change up to 100 points is detectable."""
    return change if change <= 1.0 else None


def _points(change: float | None) -> str:
    return "no change up to 100 points" if change is None else f"{100 * change:.1f} points"
