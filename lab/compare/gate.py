"""The CI gate over a finished report: ``lab gate REPORT [min_pass_rate=…] [allow_flaky=false]``.

``run`` exits 0 whichever tasks passed (a failing task is data); CI decides
with this gate. It reads ``report.json`` only and decides:

- exit 2: some run diverged from its cassette (replay divergence);
- exit 1: some run errored (infrastructure; never judged), some requested
  run has no record, nothing was judged, the overall success rate is below
  ``min_pass_rate`` (default 1.0),
  or a task *failed* — some judged run of it did not pass. With
  ``allow_flaky=true`` a flaky task (it passed at least once) is not a failed
  task; the rate threshold still counts its failures;
- exit 0 otherwise.

Every reason is stated, one line each.

``ci_verdict`` is the gate of ``lab ci`` / ``doit ci`` (SPEC R7) over every
replayed suite's report: exit 2 on a divergence, 1 when a replayed task failed
or errored or nothing was replayed, 0 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from lab.files import loads_json, read_text


@dataclass(frozen=True)
class GateResult:
    """The verdict of the gate.

    Attributes:
        code: the exit code (0 pass, 1 failed, 2 replay divergence).
        reasons: why the gate failed, one line each (empty when it passed).
        headline: one line stating the verdict and the overall figures.
    """

    code: int
    reasons: tuple[str, ...]
    headline: str

    def text(self) -> str:
        """The lines to print: the headline, then each reason."""
        return "\n".join([self.headline, *(f"  - {r}" for r in self.reasons)])


def load_report(ref: str | Path) -> dict[str, Any]:
    """Read the report ``ref`` names: a ``report.json``, its directory, or a run id.

    Raises:
        ReportError: missing, not JSON, or not a report (names the file and field).
        RecordVersionError: the report was written by a newer lab.
    """
    from lab.paths import data_dir
    from lab.store import ReportError, read_report, resolve_report

    path = resolve_report(str(ref), data_dir())
    doc = read_report(path)
    if not isinstance(doc.get("summary"), dict):
        raise ReportError(f"{path}: not a report: summary: missing")
    return doc


def evaluate(doc: dict[str, Any], *, min_pass_rate: float = 1.0, allow_flaky: bool = False) -> GateResult:
    """Apply the gate to a report document.

    Args:
        doc: a report document (``report.schema.json``).
        min_pass_rate: the lowest acceptable overall success rate, in [0, 1].
        allow_flaky: whether a task that passed at least once may also fail.

    Returns:
        A :class:`GateResult`; its code follows the module docstring.

    Raises:
        ValueError: ``min_pass_rate`` outside [0, 1].
    """
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be within [0, 1], got {min_pass_rate}")
    s = doc["summary"]
    reasons: list[str] = []
    if s.get("divergences"):
        reasons.append(f"{s['divergences']} run(s) diverged from the recording (replay divergence)")
    if s["errors"]:
        first = (doc.get("errors") or [{}])[0]
        reasons.append(f"{s['errors']} run(s) errored and were not judged (first: task {first.get('taskId')} "
                       f"run {first.get('repetition')}: {first.get('kind')}: {first.get('message')})")
    rep = doc.get("repetition") or {}
    if rep.get("completed", 0) < rep.get("requested", 0):
        reasons.append(f"{rep['requested'] - rep['completed']} of {rep['requested']} requested runs have no record")
    rate = s["successRate"]
    if rate is None:
        reasons.append("no run was judged")
    elif rate < min_pass_rate:
        reasons.append(f"success rate {_pct(rate)} is below min_pass_rate {_pct(min_pass_rate)}")
    for task in doc["tasks"]:
        if task["judged"] == 0 or task["passes"] == task["judged"]:
            continue
        if task["passes"] == 0:
            reasons.append(f"task {task['taskId']} failed: 0/{task['judged']} judged runs passed")
        elif not allow_flaky:
            reasons.append(f"task {task['taskId']} is flaky: {task['passes']}/{task['judged']} judged runs "
                           "passed (allow_flaky=true accepts it)")
    code = 2 if s.get("divergences") else (1 if reasons else 0)
    verdict = "pass" if code == 0 else f"FAIL (exit {code})"
    headline = (f"gate: {verdict} — {s['passes']}/{s['judged']} judged runs passed"
                f" ({_pct(rate)}; min_pass_rate {_pct(min_pass_rate)}), {s['errors']} errored,"
                f" allow_flaky={'true' if allow_flaky else 'false'}")
    return GateResult(code=code, reasons=tuple(reasons), headline=headline)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def ci_verdict(report_dirs: list[Path], skipped: list[tuple[str, str]]) -> tuple[int, str]:
    """(exit code, table) over the replayed suites' reports."""
    rows, code = [], 0
    for report_dir in report_dirs:
        doc = loads_json(read_text(report_dir / "report.json"))
        s = doc["summary"]
        failed = s["judged"] - s["passes"]
        status = "diverged" if s["divergences"] else ("failed" if failed or s["errors"] else "ok")
        code = max(code, 2 if s["divergences"] else (1 if status == "failed" else 0))
        rows.append((doc["header"]["suiteId"], s["runs"], s["passes"], failed, s["errors"], s["divergences"], status))
    rows += [(suite_id, "—", "—", "—", "—", "—", f"skipped: {why}") for suite_id, why in skipped]
    if not report_dirs:
        code = 1
    table = tabulate(rows, headers=["suite", "runs", "passed", "failed", "errors", "divergences", "status"],
                     tablefmt="simple")
    verdict = {0: "ci: every cassette replays cleanly and passes",
               1: "ci: FAILED: a replayed task failed or errored" if report_dirs else "ci: FAILED: nothing was replayed",
               2: "ci: FAILED: replay diverged from a recording (the harness changed what it sends)"}[code]
    return code, f"{table}\n{verdict}"
