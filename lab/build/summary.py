"""The closing summary of an eval, remembered per version of its report (the no-op path).

An eval that finds its report up to date still prints the report's summary
(``lab.report.closing.summarise``: a table of the tasks, the figures, where
the report is). The text is a function of ``report.json``, of whether
``index.html`` is there and of the code that formats it, so it is
remembered in ``<data dir>/.cache/summaries/`` under the stamps
(:mod:`lab.stamps`) of those files and of every code file loaded when it was
made, and printed again without loading the formatting code.
"""

from __future__ import annotations

from pathlib import Path

from lab.canonical import canonical_hash
from lab.stamps import cache_dir, content_stamp, remember, remembered

KIND = "report-summary"


def summarise_report(report_dir: Path) -> tuple[int, str]:
    """:func:`lab.report.closing.summarise` of ``report_dir``: (exit code, text), remembered.

    Raises:
        OSError, ValueError: as ``summarise`` (no report.json, or not a report).
    """
    ident = {"reportDir": str(report_dir)}
    file = cache_dir() / "summaries" / f"{canonical_hash(ident)}.json"
    entry = remembered(file, KIND, ident)
    if entry is not None and isinstance(entry.get("exitCode"), int) and isinstance(entry.get("text"), str):
        return entry["exitCode"], entry["text"]
    inputs = {str(p): content_stamp(p) for p in (report_dir, report_dir / "report.json", report_dir / "index.html")}
    from lab.report.closing import summarise

    code, text = summarise(report_dir)
    remember(file, KIND, ident, inputs, {"exitCode": code, "text": text})
    return code, text
