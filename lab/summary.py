"""The closing lines of an eval: the figures, where the report is, the exit code."""

from __future__ import annotations

import json
from pathlib import Path

from tabulate import tabulate


def summarise(report_dir: Path) -> tuple[int, str]:
    """Read ``report_dir/report.json`` and return (exit code, text to print).

    Exit codes (SPEC): 2 when a run diverged from its cassette, 1 when any
    run could not be judged (infrastructure error), otherwise 0 — a failing
    task is data, not an error.
    """
    doc = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    h, s = doc["header"], doc["summary"]
    rate = "—" if s["successRate"] is None else (
        f"{100 * s['successRate']:.1f}% (95% Wilson {s['wilson95'][0]:.3f}–{s['wilson95'][1]:.3f})")
    lines = [f"{h['suiteId']} {h['suiteVersion']} · {h['mode']} · {h['provider']}/{h['model']} · "
             f"k={h['k']} seed={h['seed']} · config {h['configHash'][:12]}"]
    if "note" in h:
        lines.append(h["note"])
    rows = [(t["taskId"], f"{t['passes']}/{t['judged']}", t["errors"] or "", "flaky" if t["flaky"] else "")
            for t in doc["tasks"]]
    lines.append(tabulate(rows, headers=["task", "passed", "errors", ""], tablefmt="simple"))
    lines.append(f"success rate {rate}; pass^k {_pct(s['passHatK'])}, pass@k {_pct(s['passAtK'])} of tasks")
    for err in doc["errors"]:
        lines.append(f"error: task {err['taskId']} run {err['repetition']}: {err['kind']}: {err['message']}")
    lines.append(f"report: {report_dir / 'report.md'}")
    code = 2 if s["divergences"] else (1 if s["errors"] else 0)
    return code, "\n".join(lines)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"
