"""The ``sequential`` block of a sequential variants comparison (SPEC K9).

A sequential variants command looks at the two variants' reports after each
round (:func:`look`, the maths in :mod:`lab.compare.sequential`); when it
stops, :func:`sequential_block` summarises the looks, the decision, the α
spent and what stopping saved against k, and :func:`apply_sequential` puts
that block into the comparison document and makes its aggregate verdict the
sequential decision: a fixed-sample verdict computed after stopping when the
data looked decided would not keep its error rate (optional stopping).
:func:`sequential_markdown` is the block's section of ``comparison.md``.
"""

from __future__ import annotations

from typing import Any

from lab.compare.sequential import TaskCounts, boundaries, decide, obf_spending, repeated_interval, stratified_statistic

METHOD = ("group-sequential test: Lan–DeMets O'Brien–Fleming-type alpha spending on the stratified z of the "
          "task-weighted mean difference; equivalence by repeated confidence intervals")
REFERENCES = (
    "Lan & DeMets (1983), Discrete sequential boundaries for clinical trials, Biometrika 70:659-663",
    "O'Brien & Fleming (1979), A multiple testing procedure for clinical trials, Biometrics 35:549-556",
    "Jennison & Turnbull (1989), Interim analyses: the repeated confidence interval approach, JRSS B 51:305-361",
    "Jennison & Turnbull (2000), Group Sequential Methods with Applications to Clinical Trials, ch. 7, 9, 19",
    "Mantel & Haenszel (1959), Statistical aspects of the analysis of data from retrospective studies of disease, "
    "JNCI 22:719-748 (the permutation variance per task)",
    "Agresti & Caffo (2000), Simple and effective confidence intervals for proportions and differences of "
    "proportions, The American Statistician 54:280-288",
)
SEQUENTIAL_LIMIT = ("Sequential: the aggregate verdict is the group-sequential decision, whose error rates hold "
                    "over all rounds; the per-task verdicts and figures are fixed-sample figures of the runs made "
                    "and are not adjusted for stopping early.")


def task_counts(base: dict[str, Any], cand: dict[str, Any]) -> list[TaskCounts]:
    """Passes and judged runs per task of two report documents (tasks present in both, by id)."""
    cand_tasks = {t["taskId"]: t for t in cand["tasks"]}
    out = []
    for b in base["tasks"]:
        c = cand_tasks.get(b["taskId"])
        if c is not None:
            out.append(TaskCounts(b["passes"], b["judged"], c["passes"], c["judged"]))
    return out


def look(base: dict[str, Any], cand: dict[str, Any], *, fractions: tuple[float, ...], index: int,
         alpha: float, tolerance: float) -> dict[str, Any]:
    """One look: the statistic of the two reports at round ``index`` (0-based) and its decision.

    Args:
        base, cand: the variants' report documents after this round.
        fractions: every round's information fraction (:func:`~lab.compare.sequential.information_fractions`).

    Returns:
        ``{round, runsPerTask, informationFraction, boundary, delta, z, repeatedInterval,
        alphaSpent, decision, reason}`` (rates and α as fractions; ``round`` counts from 1).

    Raises:
        ValueError: no task has judged runs on both sides.
    """
    bounds = boundaries(fractions, alpha)
    stat = stratified_statistic(task_counts(base, cand))
    last = index == len(fractions) - 1
    decision, reason = decide(stat, bounds[index], tolerance, last=last)
    lo, hi = repeated_interval(stat, bounds[index])
    return {"round": index + 1, "runsPerTask": int(base["header"]["k"]),
            "informationFraction": fractions[index], "boundary": bounds[index], "delta": stat.delta,
            "z": stat.z, "repeatedInterval": [lo, hi], "alphaSpent": obf_spending(fractions[index], alpha),
            "decision": decision, "reason": reason}


def sequential_block(looks: list[dict[str, Any]], base: dict[str, Any], cand: dict[str, Any], *, k: int,
                     round_size: int, rounds: int, alpha: float, tolerance: float) -> dict[str, Any]:
    """The ``sequential`` block: method, looks, decision, α spent, runs and cost saved against ``k``.

    Args:
        looks: every look made, in order (the last one decided, or was the last round).
        base, cand: the reports of the last look.
        k: the most repetitions per task; round_size: repetitions added per round;
        rounds: rounds planned up to k.

    Returns:
        A JSON-able dict (comparison.schema.json ``sequential``). ``runsExecuted``
        counts both variants' runs at the stop; ``costUsdSaved`` (from the
        estimated cost per judged run) and ``tokensSaved`` (measured tokens per
        judged run) appear only when both reports carry those figures.
    """
    last = looks[-1]
    variants = 2
    tasks = len(base["tasks"])
    executed = int(base["summary"]["runs"]) + int(cand["summary"]["runs"])
    maximum = k * tasks * variants
    saved = max(0, maximum - executed)
    block: dict[str, Any] = {
        "method": METHOD, "references": list(REFERENCES), "alpha": alpha, "tolerance": tolerance, "maxK": k,
        "round": round_size, "plannedRounds": rounds, "looks": looks, "stoppedAtRound": last["round"],
        "stoppedEarly": last["round"] < rounds, "decision": last["decision"], "reason": last["reason"],
        "alphaSpent": last["alphaSpent"], "runsExecuted": executed, "runsMax": maximum, "runsSaved": saved}
    judged = int(base["summary"]["judged"]) + int(cand["summary"]["judged"])
    if judged and "estimated" in base and "estimated" in cand:
        per_run = (base["estimated"]["costUsd"] + cand["estimated"]["costUsd"]) / judged
        block["costUsdSaved"] = saved * per_run
    measured = [doc.get("measured") or {} for doc in (base, cand)]
    if judged and all("tokensPerAttempt" in m for m in measured):
        tokens = sum(m["tokensPerAttempt"] * m["runsJudged"] for m in measured)
        block["tokensSaved"] = round(saved * tokens / judged)
    return block


VERDICTS = {"improved": "improved", "regressed": "regressed", "unchanged": "unchanged",
            "inconclusive": "inconclusive"}


def apply_sequential(doc: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (from ``compare_reports``) with ``sequential`` added and the aggregate verdict made the
    sequential decision.

    *improved* becomes *mixed* when the comparison lists tasks that lost
    reliability (``aggregate.lostReliability``). The fixed-sample verdict is
    kept as ``sequential.fixedSampleVerdict``; a not-comparable aggregate is
    left as it is.

    Returns:
        A new dict; ``doc`` is not changed.
    """
    aggregate = dict(doc["aggregate"])
    block = {**block, "fixedSampleVerdict": aggregate["verdict"]}
    if aggregate["verdict"] not in ("not_comparable", "changed"):
        verdict = VERDICTS[block["decision"]]
        lost = list(aggregate.get("lostReliability") or [])
        reason = f"sequential, round {block['stoppedAtRound']} of {block['plannedRounds']}: {block['reason']}"
        if verdict == "improved" and lost:
            verdict = "mixed"
            reason += f"; but {len(lost)} task(s) lost reliability: {', '.join(lost)}"
        aggregate.update(verdict=verdict, reason=reason)
    limits = [*doc.get("limits", []), SEQUENTIAL_LIMIT]
    return {**doc, "aggregate": aggregate, "limits": limits, "sequential": block}


def sequential_markdown(block: dict[str, Any]) -> str:
    """The ``## Sequential test`` section of comparison.md (and of the console)."""
    early = "stopped early" if block["stoppedEarly"] else "ran to k"
    lines = ["## Sequential test", "",
             f"**{block['decision']}** at round {block['stoppedAtRound']} of {block['plannedRounds']} ({early}; "
             f"rounds of {block['round']}, k at most {block['maxK']}): {block['reason']}.", "",
             f"- α spent: {block['alphaSpent']:.4f} of {block['alpha']:.2f} (two-sided); tolerance "
             f"±{100 * block['tolerance']:.1f} points",
             f"- runs: {block['runsExecuted']} made, {block['runsSaved']} saved of at most {block['runsMax']}"]
    if "costUsdSaved" in block:
        lines.append(f"- estimated cost saved: ${block['costUsdSaved']:.4f}")
    if "tokensSaved" in block:
        lines.append(f"- tokens saved (measured per run): {block['tokensSaved']:,}")
    lines += ["", "| round | runs per task | difference | z | boundary | repeated 95% interval | α spent | decision |",
              "|---|---|---|---|---|---|---|---|"]
    for row in block["looks"]:
        lo, hi = row["repeatedInterval"]
        lines.append(f"| {row['round']} | {row['runsPerTask']} | {100 * row['delta']:+.1f} | {row['z']:+.2f} | "
                     f"±{row['boundary']:.2f} | [{100 * lo:+.1f}, {100 * hi:+.1f}] | {row['alphaSpent']:.4f} | "
                     f"{row['decision']} |")
    lines += ["", f"Method: {block['method']}. The fixed-sample verdict of the same runs would be "
              f"*{block.get('fixedSampleVerdict', '—')}*; it is not used (its error rate does not hold after "
              "stopping when the data looked decided).", "",
              "References: " + "; ".join(block["references"]) + ".", ""]
    return "\n".join(lines)
