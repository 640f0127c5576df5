"""Compare two reports of the same suite version (SPEC K1, K3, K5–K7).

Per task (live, or any pair of equal non-replay modes), checked in order:

- *not comparable*: the task is absent from one report, the modes differ,
  or a side has errored runs (infrastructure failures).
- *low power*: fewer than 5 judged runs on a side (SPEC M3).
- *improved* / *regressed*: Fisher's exact test of the two rates, its
  p-value Holm-adjusted across the tested tasks of the comparison, is at
  most α = 0.05 (:mod:`lab.compare.decide`).
- *inconclusive*: otherwise.

Every tested task also carries the difference cand − base with Newcombe's
95 % interval, the raw and adjusted p-values, the conservative Wilson screen
of the original rule (``screen``: *improved* / *regressed* when the two 95 %
Wilson intervals are disjoint, else *overlap*; touching counts as overlap),
whether its raw pass^k at the common k dipped (shown, never a verdict), and
the smallest change it could detect (SPEC K8).

A task **lost reliability** exactly when its verdict is *regressed*: a
significant loss after the correction across tasks.

The aggregate (K6) is over *paired* tasks (judged runs on both sides): the
task-weighted mean difference with its 95 % interval and the stratified
permutation p-value; verdicts *improved*, *mixed*, *regressed*,
*unchanged*, *inconclusive* (:mod:`lab.compare.decide`), *inconclusive* too
when some paired task has fewer than 5 judged runs on a side (checked
first), *not comparable* when the modes differ or no task is paired.

In replay (both reports ``mode: replay``) a task is *changed* when the runs'
statuses or verifier statuses differ (repetition by repetition), else
*unchanged*; a replay comparison carries no interval and claims no
direction: no task loses reliability, and the aggregate is *changed* (some
task changed or is absent from a side) or *unchanged*.

Deltas (K3): tokens and wall time per success, cached-input ratio and
estimated cost per success (:mod:`lab.compare.deltas`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from lab.compare.aggregate import aggregate_block, assess_tasks, disjoint, screen
from lab.compare.deltas import DELTA_FIGURES, deltas
from lab.compare.markdown import CONDITION_KEYS, render_comparison_markdown
from lab.errors import LabError, RecordVersionError
from lab.report.build import LOW_POWER_RUNS
from lab.report.stats import pass_hat_k, wilson_interval

COMPARISON_SCHEMA_VERSION = 1
REPORT_SCHEMA_VERSION = 1
DEFAULT_TOLERANCE = 0.05
ALPHA = 0.05
EPSILON = 1e-12  # float slack for "pass^k fell"

TaskVerdict = Literal["improved", "regressed", "inconclusive", "low_power", "not_comparable",
                      "changed", "unchanged"]
AggregateVerdict = Literal["improved", "regressed", "mixed", "unchanged", "inconclusive", "not_comparable",
                           "changed"]

LIMITS = (
    "Inference is about this suite's own tasks: each task is a stratum and the uncertainty is run-to-run "
    "variation within a task; it does not generalise to other tasks (the task-sample standard error, "
    "tasks taken as a sample, is shown apart).",
    "Assumed: runs of a task are independent with one success rate per side; runs that share provider "
    "state, caches or a rate-limit window may not be, and then every p-value and interval is too optimistic.",
    "Corrected: per-task p-values are Holm-adjusted across the tested tasks of this comparison (family-wise "
    "error at most 5 %); the aggregate test is one test and needs no correction.",
    "The aggregate p-value is exact (the permutation distribution of base/cand labels within each task); its "
    "interval and the power figures are approximations, measured to hold on a simulated grid "
    "(docs/compare.md).",
    "Not claimed: that an inconclusive or unchanged task did not change, nor anything about pass^k dips, "
    "which are shown, not tested; the Wilson screen column is the older, more conservative rule.",
    "Excluded: errored runs (infrastructure failures) from every rate; a task with errored runs gets no "
    "per-task verdict.",
)

REPLAY_LIMITS = (
    "A replay measures the harness alone against recorded model answers; it says nothing about model quality.",
    "Each task is changed or unchanged: run and verifier statuses compared repetition by repetition; "
    "no interval and no direction is claimed.",
    "An errored run (a replay divergence among them) is a status like any other here: a task whose runs "
    "error on one side only is changed.",
    "Token and time deltas compare recorded usage and this machine's wall time, not a model's behaviour.",
)


class IncompatibleReports(LabError):
    """The two reports measure different suites or suite versions (CLI exit 3)."""


def compare_reports(base: dict[str, Any], cand: dict[str, Any], *,
                    tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """The comparison document of two report documents (``report.json``).

    Args:
        base: the reference report.
        cand: the candidate report.
        tolerance: the smallest change of the aggregate success rate that
            matters, as a fraction in [0, 1) (0.05 = 5 points): *improved*
            must exceed it, *unchanged* must show the interval inside ±it.

    Returns:
        A JSON-able dict, ``schemaVersion`` first (comparison.schema.json):
        conditions of both sides, ``suiteDigestMismatch``, per-task entries,
        verdict ``counts``, ``aggregate``, ``deltas``, ``warnings``, ``limits``.

    Raises:
        IncompatibleReports: different suite id or suite version.
        RecordVersionError: a report newer than this lab reads.
        ValueError: tolerance outside [0, 1).
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    _check_compatible(base, cand)
    hb, hc = base["header"], cand["header"]
    same_mode = hb.get("mode") == hc.get("mode")
    replay = same_mode and hb.get("mode") == "replay"
    tasks = _task_entries(base, cand, same_mode=same_mode, replay=replay)
    mismatch = hb.get("suiteDigest") != hc.get("suiteDigest")
    if replay:
        aggregate = _replay_aggregate(tasks, tolerance)
    else:
        assess_tasks(tasks, ALPHA)
        aggregate = aggregate_block(tasks, tolerance, same_mode=same_mode, alpha=ALPHA)
    return {
        "schemaVersion": COMPARISON_SCHEMA_VERSION,
        "base": _conditions(hb), "cand": _conditions(hc),
        "suiteDigestMismatch": mismatch, "replay": replay, "tolerance": tolerance,
        "tasks": tasks, "counts": _counts(tasks), "aggregate": aggregate,
        "deltas": deltas(base, cand, same_mode=same_mode),
        "warnings": _warnings(hb, hc, tasks, aggregate, mismatch=mismatch, replay=replay),
        "limits": list(REPLAY_LIMITS if replay else LIMITS),
    }


def _check_compatible(base: dict[str, Any], cand: dict[str, Any]) -> None:
    for side, doc in (("base", base), ("cand", cand)):
        if doc.get("schemaVersion", 0) > REPORT_SCHEMA_VERSION:
            raise RecordVersionError(f"{side} report: schemaVersion {doc['schemaVersion']} is newer "
                                     f"than this lab reads ({REPORT_SCHEMA_VERSION})")
    hb, hc = base["header"], cand["header"]
    for key, what in (("suiteId", "suite id"), ("suiteVersion", "suite version")):
        if hb.get(key) != hc.get(key):
            raise IncompatibleReports(
                f"incompatible reports: {what} differs (base {hb.get('suiteId')} {hb.get('suiteVersion')}, "
                f"cand {hc.get('suiteId')} {hc.get('suiteVersion')}); compare runs of the same suite version")


def _conditions(header: dict[str, Any]) -> dict[str, Any]:
    return {key: header[key] for key in CONDITION_KEYS if key in header}


# --- per task -------------------------------------------------------------------------------

def _task_entries(base: dict[str, Any], cand: dict[str, Any], *, same_mode: bool,
                  replay: bool) -> list[dict[str, Any]]:
    b_tasks = {t["taskId"]: t for t in base["tasks"]}
    c_tasks = {t["taskId"]: t for t in cand["tasks"]}
    k_cap = min(int(base["header"]["k"]), int(cand["header"]["k"]))
    modes = (base["header"].get("mode"), cand["header"].get("mode"))
    entries = []
    for task_id in sorted(b_tasks.keys() | c_tasks.keys()):
        entry = _paired_sides(task_id, b_tasks.get(task_id), c_tasks.get(task_id), k_cap, replay=replay)
        if replay:
            verdict, reason = _replay_verdict(entry, _pattern(base, task_id), _pattern(cand, task_id))
        else:
            verdict, reason = _gate(entry, same_mode=same_mode, modes=modes)
        entry["verdict"], entry["reason"] = verdict, reason
        entry["lostReliability"], entry["lostReliabilityReasons"] = False, []
        entries.append(entry)
    return entries


def _side(block: dict[str, Any], *, replay: bool) -> dict[str, Any]:
    """One side of a task entry; in replay without ``wilson95`` (a replay has no sampling error)."""
    n, c = int(block["judged"]), int(block["passes"])
    side: dict[str, Any] = {"runs": int(block["runs"]), "judged": n, "passes": c, "errors": int(block["errors"])}
    if replay:
        side.update(successRate=c / n if n else None)
    elif n:
        low, high = wilson_interval(c, n)
        side.update(successRate=c / n, wilson95=[low, high])
    else:
        side.update(successRate=None, wilson95=None)
    return side


def _paired_sides(task_id: str, b: dict[str, Any] | None, c: dict[str, Any] | None, k_cap: int, *,
                  replay: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"taskId": task_id}
    if b is not None:
        entry["base"] = _side(b, replay=replay)
    if c is not None:
        entry["cand"] = _side(c, replay=replay)
    paired = b is not None and c is not None and entry["base"]["judged"] > 0 and entry["cand"]["judged"] > 0
    entry["paired"] = paired
    if paired:
        sb, sc = entry["base"], entry["cand"]
        common_k = min(k_cap, sb["judged"], sc["judged"])
        entry["commonK"] = common_k
        for s in (sb, sc):
            s["passHatK"] = pass_hat_k(s["judged"], s["passes"], common_k)
        entry["successRateDelta"] = sc["successRate"] - sb["successRate"]
        if not replay:
            entry["passHatKDip"] = sc["passHatK"] < sb["passHatK"] - EPSILON
    return entry


def _gate(entry: dict[str, Any], *, same_mode: bool, modes: tuple[Any, Any]) -> tuple[TaskVerdict, str]:
    """The verdict before any test: not comparable, low power, or (provisionally) inconclusive."""
    b, c = entry.get("base"), entry.get("cand")
    if b is None or c is None:
        return "not_comparable", f"task absent from the {'base' if b is None else 'cand'} report"
    if not same_mode:
        return "not_comparable", f"different modes (base {modes[0]}, cand {modes[1]})"
    errored = [f"{name} {s['errors']}" for name, s in (("base", b), ("cand", c)) if s["errors"]]
    if errored:
        return "not_comparable", f"errored runs ({', '.join(errored)})"
    if b["judged"] < LOW_POWER_RUNS or c["judged"] < LOW_POWER_RUNS:
        return "low_power", (f"fewer than {LOW_POWER_RUNS} judged runs on a side "
                             f"(base {b['judged']}, cand {c['judged']})")
    return "inconclusive", "not tested"


def _pattern(doc: dict[str, Any], task_id: str) -> dict[int, tuple[str, tuple[tuple[str, str], ...]]]:
    """repetition -> (run status, sorted verifier statuses) for one task."""
    return {int(r["repetition"]): (r["status"], tuple(sorted((r.get("verifiers") or {}).items())))
            for r in doc["runs"] if r["taskId"] == task_id}


def _replay_verdict(entry: dict[str, Any], b: dict[int, Any], c: dict[int, Any]) -> tuple[TaskVerdict, str]:
    if "base" not in entry or "cand" not in entry:
        return "not_comparable", f"task absent from the {'cand' if 'base' in entry else 'base'} report"
    if b == c:
        return "unchanged", "same run and verifier statuses in every repetition"
    for rep in sorted(b.keys() | c.keys()):
        if rep not in b or rep not in c:
            return "changed", f"repetition {rep} only in {'base' if rep in b else 'cand'}"
        if b[rep][0] != c[rep][0]:
            return "changed", f"repetition {rep}: {b[rep][0]} -> {c[rep][0]}"
        if b[rep][1] != c[rep][1]:
            bv, cv = dict(b[rep][1]), dict(c[rep][1])
            vid = next(v for v in sorted(bv.keys() | cv.keys()) if bv.get(v) != cv.get(v))
            return "changed", f"repetition {rep}: verifier {vid}: {bv.get(vid, 'absent')} -> {cv.get(vid, 'absent')}"
    return "changed", "runs differ"  # unreachable: b != c implies a differing repetition


def _counts(tasks: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t["verdict"]] = counts.get(t["verdict"], 0) + 1
    return dict(sorted(counts.items()))


def _replay_aggregate(tasks: list[dict[str, Any]], tolerance: float) -> dict[str, Any]:
    """Replay: *changed* when some task changed or is absent from a side, else *unchanged*; no rates."""
    block: dict[str, Any] = {"tolerance": tolerance, "pairedTasks": sum(1 for t in tasks if t["paired"]),
                             "excludedTasks": [t["taskId"] for t in tasks if not t["paired"]],
                             "lostReliability": []}
    changed = [t["taskId"] for t in tasks if t["verdict"] != "unchanged"]
    if changed:
        return {**block, "verdict": "changed",
                "reason": f"replay: {len(changed)} of {len(tasks)} task(s) changed: {', '.join(changed)}"}
    return {**block, "verdict": "unchanged",
            "reason": f"replay: all {len(tasks)} task(s) unchanged (same run and verifier statuses)"}


# --- warnings -------------------------------------------------------------------------------

def _warnings(hb: dict[str, Any], hc: dict[str, Any], tasks: list[dict[str, Any]], aggregate: dict[str, Any],
              *, mismatch: bool, replay: bool) -> list[str]:
    warnings = []
    if mismatch:
        warnings.append(f"suite digest differs at the same suiteVersion {hb.get('suiteVersion')} "
                        f"(base {str(hb.get('suiteDigest'))[:12]}, cand {str(hc.get('suiteDigest'))[:12]}): "
                        "forgotten suiteVersion bump?")
    if hb.get("mode") != hc.get("mode"):
        warnings.append(f"different modes (base {hb.get('mode')}, cand {hc.get('mode')}): nothing is comparable")
    if hb.get("sandbox") != hc.get("sandbox"):
        warnings.append(f"different sandboxes (base {hb.get('sandbox') or 'not recorded'}, cand "
                        f"{hc.get('sandbox') or 'not recorded'}): commands ran with different "
                        "isolation, a changed verdict may come from it")
    if hb.get("runId") is not None and hb.get("runId") == hc.get("runId"):
        warnings.append(f"base and cand are the same run id ({hb.get('runId')})")
    if replay:
        warnings.append("replay: measures the harness alone; says nothing about model quality")
    if aggregate["excludedTasks"]:
        warnings.append(f"the aggregate leaves out {len(aggregate['excludedTasks'])} task(s) without judged runs "
                        f"on both sides: {', '.join(aggregate['excludedTasks'])}")
    low = [t["taskId"] for t in tasks if t["verdict"] == "low_power"]
    if low:
        warnings.append(f"{len(low)} task(s) have fewer than {LOW_POWER_RUNS} judged runs on a side (low power)")
    return warnings


def write_comparison(out_dir: Path, doc: dict[str, Any], *,
                     reports: tuple[Path, Path] | None = None) -> tuple[Path, Path]:
    """Write ``comparison.json``, ``comparison.md`` and ``comparison.html`` of ``doc`` into ``out_dir``
    (each atomically); ``reports`` (base and cand report directories) are linked from the HTML page.

    Returns:
        (json path, markdown path); the HTML page sits beside them.

    Raises:
        OSError: the directory cannot be created or written.
    """
    from lab.files import dumps_json, write_atomic

    json_path, md_path = out_dir / "comparison.json", out_dir / "comparison.md"
    write_atomic(json_path, dumps_json(doc).encode("utf-8"))
    write_atomic(md_path, render_comparison_markdown(doc).encode("utf-8"))
    from lab.compare.html import render_comparison_html

    html = render_comparison_html(doc, out_dir=out_dir, reports=reports)
    write_atomic(out_dir / "comparison.html", html.encode("utf-8"))
    return json_path, md_path


__all__ = ["COMPARISON_SCHEMA_VERSION", "DELTA_FIGURES", "DEFAULT_TOLERANCE", "IncompatibleReports", "LIMITS",
           "REPLAY_LIMITS",
           "compare_reports", "disjoint", "render_comparison_markdown", "screen", "write_comparison"]
