"""report.md: the conditions, then measured and estimated tables apart (SPEC M8)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _interval(interval: list[float] | None) -> str:
    return "—" if interval is None else f"[{interval[0]:.4f}, {interval[1]:.4f}]"


def render_markdown(doc: dict[str, Any]) -> str:
    """The Markdown report for a report document from ``build_report``."""
    h, s = doc["header"], doc["summary"]
    lines = [f"# {h['suiteId']} {h['suiteVersion']} — {h['mode']}", ""]
    if "note" in h:
        lines += [f"> {h['note']}", ""]
    conditions = [
        ("suite", f"{h['suiteId']} {h['suiteVersion']} (digest {h['suiteDigest'][:12]})"),
        ("harness", f"{h['harnessVersion']} (digest {h['harnessDigest'][:12]})"),
        ("config hash", h["configHash"]), ("variant", h.get("variant", "baseline")),
        ("provider / model", f"{h['provider']} / {h['model']}"),
        ("mode", h["mode"]), ("k", h["k"]), ("seed", h["seed"]), ("run id", h["runId"]),
    ]
    lines += ["## Conditions", "", tabulate(conditions, headers=["", ""], tablefmt="github"), ""]
    lines += ["## Summary", ""]
    rows = [("runs", s["runs"]), ("judged", s["judged"]), ("passes", s["passes"]),
            ("errors (excluded)", s["errors"]),
            ("success rate", f"{_pct(s['successRate'])} {_interval(s['wilson95'])} (95% Wilson)"),
            ("pass@k (tasks)", _pct(s["passAtK"])), ("pass^k (tasks)", _pct(s["passHatK"])),
            ("false positives / negatives", f"{s['falsePositives']} / {s['falseNegatives']}")]
    lines += [tabulate(rows, tablefmt="github", headers=["", ""]), ""]
    if s["lowPower"]:
        lines += [f"Low power: {s['judged']} judged runs (fewer than 5); intervals are wide.", ""]
    if s["flakyTasks"]:
        lines += [f"Flaky tasks (pass@k yes, pass^k no): {', '.join(s['flakyTasks'])}", ""]
    lines += ["## Tasks", ""]
    table = [(t["taskId"], t["judged"], t["passes"], t["budgetExceeded"], t["errors"], _pct(t["successRate"]),
              _interval(t["wilson95"]), _pct(t["passAtK"]), _pct(t["passHatK"]),
              "flaky" if t["flaky"] else "") for t in doc["tasks"]]
    lines += [tabulate(table, headers=["task", "judged", "pass", "budget", "error", "rate", "95% Wilson",
                                       "pass@k", "pass^k", ""], tablefmt="github"), ""]
    lines += _measured_lines(doc.get("measured")) + _estimated_lines(doc.get("estimated"))
    if doc["errors"]:
        lines += ["## Errors (not judged)", ""]
        lines += [tabulate([(e["taskId"], e["repetition"], e["kind"], e["message"]) for e in doc["errors"]],
                           headers=["task", "rep", "kind", "message"], tablefmt="github"), ""]
    return "\n".join(lines)


def _measured_lines(m: dict[str, Any] | None) -> list[str]:
    if m is None:
        return []
    rows = [(key, value) for key, value in m.items() if value is not None]
    lines = ["## Measured", "", "Provider-reported usage (main loop only) and wall time.", ""]
    if m.get("usageIncomplete"):
        lines += ["Token figures omitted: some runs did not report usage.", ""]
    return lines + [tabulate(rows, headers=["figure", "value"], tablefmt="github"), ""]


def _estimated_lines(e: dict[str, Any] | None) -> list[str]:
    if e is None:
        return []
    rows = [("cost (USD)", f"{e['costUsd']:.4f}"), ("input rate (USD/Mtok)", e["rates"]["inputUsdPerMTok"]),
            ("output rate (USD/Mtok)", e["rates"]["outputUsdPerMTok"])]
    return ["## Estimated", "", "Estimated from the given rates; never added to measured figures.", "",
            tabulate(rows, headers=["figure", "value"], tablefmt="github"), ""]
