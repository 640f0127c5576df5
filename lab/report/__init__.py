"""Reports: build the numbers from run records, then write them out whole."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from lab.files import dumps_json, dumps_line, publish_dir
from lab.report.build import build_report
from lab.report.markdown import render_markdown

__all__ = ["build_report", "render_markdown", "write_report"]


def write_report(report_dir: Path, doc: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Publish ``report.json``, ``report.md`` and ``runs.jsonl`` in ``report_dir``.

    The files are written into a staging directory beside it and renamed
    into place together: a reader never sees a half-written report.
    """
    report_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{report_dir.name}.", dir=report_dir.parent))
    ordered = sorted(records, key=lambda r: (r["taskId"], r["repetition"]))
    (staging / "report.json").write_text(dumps_json(doc), encoding="utf-8")
    (staging / "report.md").write_text(render_markdown(doc), encoding="utf-8")
    (staging / "runs.jsonl").write_text(
        "".join(dumps_line(r) for r in ordered), encoding="utf-8")
    publish_dir(staging, report_dir)
