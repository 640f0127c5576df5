"""The closing lines of an eval: the figures, where the report is, the exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tabulate import tabulate

from lab.console import visible
from lab.report.executor_status import totals_text
from lab.report.jsondoc import load_document
from lab.report.markdown import endpoint_text

LOW_POWER_RUNS = 5  # as lab.report.build; the flag itself is read from the report


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) folded to one space
    and control characters escaped (:func:`lab.console.visible`).

    Server messages may span lines, and file names an agent chose may carry
    terminal escape sequences; a console line (progress, ``error:``) must not.
    """
    return visible(" ".join(text.split()))


def summarise(report_dir: Path) -> tuple[int, str]:
    """Read ``report_dir/report.json`` and return (exit code, text to print).

    Exit codes (SPEC): 2 when a run diverged from its cassette, 1 when any
    run could not be judged (infrastructure error), otherwise 0 — a failing
    task is data, not an error.
    """
    doc = load_document(report_dir / "report.json", runs=False)  # the figures, not 100k run lines
    h, s = doc["header"], doc["summary"]
    rate = "—" if s["successRate"] is None else f"{100 * s['successRate']:.1f}%"
    if s["wilson95"] is not None:
        rate += f" (95% Wilson {s['wilson95'][0]:.3f}–{s['wilson95'][1]:.3f})"
    agent = h.get("agent") or {}
    named = f"agent {agent.get('name')} {agent.get('version')} · " if agent.get("kind") == "command" else ""
    lines = [f"{h['suiteId']} {h['suiteVersion']} · {h['mode']} · {h['provider']}/{h['model']} · {named}"
             f"k={h['k']} seed={h['seed']} · config {h['configHash'][:12]}"
             + (f" · sandbox: {h['sandbox']}" if "sandbox" in h else ""),
             f"endpoint {endpoint_text(h)} · run id {h['runId']}"]
    if "note" in h:
        lines.append(h["note"])
    rows = [(t["taskId"], f"{t['passes']}/{t['judged']}", t["errors"] or "",
             totals_text(t.get("executorStatus"), all_names=False), _flags(t)) for t in doc["tasks"]]
    lines.append(tabulate(rows, headers=["task", "passed", "errors", "executor", "notes"], tablefmt="simple"))
    lines.append(f"success rate {rate}; pass^k {_pct(s['passHatK'])}, pass@k {_pct(s['passAtK'])} of tasks")
    lines.append(claims_and_tokens_line(doc))
    if "executorStatus" in s:
        lines.append(f"executor: {totals_text(s['executorStatus'])}")
    lines.append(attempted_line(doc))
    lines += _warnings(doc)
    for err in doc["errors"]:
        lines.append(one_line(f"error: task {err['taskId']} run {err['repetition']}: {err['kind']}: "
                              f"{err['message']}"))
    lines.append(f"report: {report_dir / 'report.md'}")
    if (report_dir / "index.html").exists():
        lines.append(f"html: {report_dir / 'index.html'}")
    code = 2 if s["divergences"] else (1 if s["errors"] else 0)
    return code, "\n".join(lines)


def claims_and_tokens_line(doc: dict[str, Any]) -> str:
    """False positives and negatives (SPEC X2: the agent's claim against the verdict), then the
    token totals of the judged runs; the totals only when every judged run reported usage (M4).

    The total is the whole spend, as ``lab admit`` judges it: main-loop input and output plus the
    compaction calls' tokens (``measured.compactionTokens``, shown as ``N compaction`` when not 0).
    When a compaction call did not report its usage the total is the main loop's and says so.
    """
    s = doc["summary"]
    line = (f"false positives {s['falsePositives']} (claimed success, failed), "
            f"false negatives {s['falseNegatives']}")
    measured = doc.get("measured")
    if measured and not measured.get("usageIncomplete"):
        tokens_in, tokens_out = measured["inputTokens"], measured["outputTokens"]
        compaction = measured.get("compactionTokens")
        parts = f"{tokens_in:,} in, {tokens_out:,} out" + (f", {compaction:,} compaction" if compaction else "")
        line += (f"; tokens {tokens_in + tokens_out + (compaction or 0):,} ({parts}) "
                 f"over {measured['runsJudged']} judged run(s)")
        if compaction is None and measured.get("compactions"):
            line += ", main loop only: not every compaction call reported its usage"
    return line


def attempted_line(doc: dict[str, Any]) -> str:
    """How many planned runs have a record, and why the others were not attempted."""
    rep = doc["repetition"]
    requested, completed = int(rep["requested"]), int(rep["completed"])
    missing = requested - completed
    if missing <= 0:
        return f"runs: {completed} of {requested} planned runs attempted"
    why = ("the eval was voided after three infrastructure errors in a row" if doc["header"].get("voided")
           else "the eval was stopped before them")
    return f"runs: {completed} of {requested} planned runs attempted; {missing} not attempted ({why})"


def _flags(task: dict[str, Any]) -> str:
    return ", ".join(f for f, on in (("flaky", task["flaky"]), ("low power", task.get("lowPower"))) if on)


def _warnings(doc: dict[str, Any]) -> list[str]:
    """Low power (M3) overall and per task; token figures omitted (M4)."""
    s, lines = doc["summary"], []
    if s.get("lowPower"):
        lines.append(f"low power: {s['judged']} judged runs overall (fewer than {LOW_POWER_RUNS})"
                     + ("" if s["wilson95"] is None else "; intervals are wide"))
    low_tasks = s.get("lowPowerTasks") or []
    if low_tasks:
        lines.append(f"low power: {len(low_tasks)} of {s['tasks']} tasks have fewer than {LOW_POWER_RUNS} "
                     "judged runs")
    measured = doc.get("measured")
    if measured and measured.get("usageIncomplete"):
        missing = measured["runsJudged"] - measured["runsReportingUsage"]
        lines.append(f"token figures omitted: {missing} of {measured['runsJudged']} judged runs "
                     "did not report usage")
    return lines


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"
