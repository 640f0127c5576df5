"""Writing every report file in one ordered pass over the run records, in memory bounded whatever their count.

:func:`write_report_from_files` is what an eval's report task calls. It
reads each record file twice, one record at a time: first for its place in
report order (task, repetition, seed) and, without an event stream, its
``run_finished`` event, both sorted on disk (``lab.report.spool.ExternalSort``);
then in report order, feeding :func:`publish`. :func:`publish` (also behind
``lab.report.write_report``) writes ``runs.jsonl`` and the run pages as the
records come, tallies the figures (``lab.report.tally``) and keeps what the
other files need of each run in spools; report.json, report.md, index.html
and junit.xml are then written in chunks from the document and the spools.
Everything goes to a staging directory renamed into place at the end.

What stays in memory per run: nothing but one 8-byte wall time (the exact
median) and one 8-byte score (the exact mean). Per task: the current task's
figures only, its per-run spreads bounded (``lab.report.distribution``: at
most 10 000 values each). A 100k-run report builds in a few tens of megabytes.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lab.errors import LabError
from lab.files import dumps_line, encodable, loads_json, publish_dir, read_text
from lab.report.evidence import HtmlRuns
from lab.report.html import iter_html
from lab.report.jsondoc import iter_dumps_json
from lab.report.junit import JunitRuns, iter_junit
from lab.report.lines import EVENT_SCHEMA, record_line
from lab.report.markdown import failed_rows, iter_markdown
from lab.report.spool import ExternalSort, Spool
from lab.report.tally import ReportTally


@contextlib.contextmanager
def work_dir(report_dir: Path) -> Iterator[Path]:
    """A private directory beside ``report_dir`` for spools and sorted runs, removed afterwards."""
    report_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{report_dir.name}.work.", dir=report_dir.parent))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def publish(report_dir: Path, records: Iterable[dict[str, Any]], count: int, *, header: dict[str, Any] | None = None,
            doc: dict[str, Any] | None = None, event_lines: Iterable[str] = (), work: Path | None = None,
            line: Callable[[dict[str, Any]], str] = dumps_line) -> None:
    """Write every report file into a staging directory, then rename it to ``report_dir``.

    Args:
        report_dir: the report directory (replaced whole if it exists).
        records: the run records in report order (``lab.report.build.sort_records``), read once.
        count: how many records ``records`` yields (a report of more than
            1000 runs puts their evidence on run pages).
        header: the report's conditions, for a document tallied from ``records``;
        doc: or the document already built over them (``build_report``).
        event_lines: the lines of ``events.jsonl``, each with its newline.
        work: where spools go; default a directory beside ``report_dir``.
        line: formats a record as its ``runs.jsonl`` line (``lab.files.dumps_line``).
    """
    if (header is None) == (doc is None):
        raise TypeError("publish: give header or doc, not both")
    with contextlib.ExitStack() as stack:
        if work is None:
            work = stack.enter_context(work_dir(report_dir))
        spools: list[Spool] = []
        stack.callback(_close_all, spools)

        def new_list() -> Spool:
            spools.append(Spool(work))
            return spools[-1]

        staging = Path(tempfile.mkdtemp(prefix=f".{report_dir.name}.", dir=report_dir.parent))
        try:
            staging.chmod(0o755)  # mkdtemp makes it private; a report is meant to be read (CI artifacts)
            _write_all(staging, records, count, header, doc, event_lines, new_list, line)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        publish_dir(staging, report_dir)


def _close_all(spools: list[Spool]) -> None:
    for spool in spools:
        spool.close()


def _write_all(staging: Path, records: Iterable[dict[str, Any]], count: int, header: dict[str, Any] | None,
               doc: dict[str, Any] | None, event_lines: Iterable[str], new_list: Callable[[], Spool],
               line: Callable[[dict[str, Any]], str]) -> None:
    h = header if header is not None else (doc or {})["header"]
    tally = ReportTally(header, new_list=new_list) if header is not None else None
    html = HtmlRuns(count, f"{h['suiteId']} {h['suiteVersion']}", new_list, staging)
    junit = JunitRuns(new_list)
    failed = new_list()
    try:
        with open(staging / "runs.jsonl", "w", encoding="utf-8") as runs:
            for record in records:
                text = line(record)
                runs.write(text)
                if tally is not None:
                    tally.add(record)
                html.add(record, text)  # also writes the run's attempts/<taskId>/<NNNN>/
                junit.add(record)
                for row in failed_rows(record):
                    failed.append(row)
    finally:
        html.close()  # the last run page (also when a record could not be read: no open file left)
    junit.close()
    if tally is not None:
        doc = tally.document()
    assert doc is not None
    _write(staging / "report.json", iter_dumps_json(doc))
    _write(staging / "report.md", iter_markdown(doc, failed))
    _write(staging / "events.jsonl", event_lines)
    _write(staging / "index.html", iter_html(doc, html))
    _write(staging / "junit.xml", iter_junit(doc, junit))


def _write(path: Path, chunks: Iterable[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(encodable(chunk) for chunk in chunks)


def write_report_from_files(report_dir: Path, header: dict[str, Any], paths: Sequence[Path], *,
                            expected: Sequence[dict[str, Any]] | None = None) -> int:
    """Build and publish the report over the run record files ``paths`` (the eval's planned runs).

    A missing file is a planned run that was not made; with ``expected``, a
    record whose ``inputs`` differ from its path's planned inputs (an older
    cassette, harness or suite) is not this eval's result and counts as not
    made either. The header gets ``voided``: whether any planned run has no
    record of its own. ``events.jsonl`` holds one ``run_finished`` event per
    record (``lab.report.lines.derived_events``).

    Args:
        report_dir: the report directory (replaced whole if it exists).
        header: the report's conditions (``lab.report.build.build_report``).
        paths: the record files, in any order.
        expected: the planned inputs of each path (same length and order), or None.

    Returns:
        How many records the report holds.

    Raises:
        LabError: a record file that is not readable JSON (names it).
        OSError: a file that cannot be read or written.
    """
    if expected is not None and len(expected) != len(paths):
        raise ValueError(f"write_report_from_files: {len(expected)} expected inputs for {len(paths)} paths")
    with work_dir(report_dir) as work:
        order, events = ExternalSort(work), ExternalSort(work)
        try:
            kept = 0
            for index, path in enumerate(paths):
                record = _load(path, missing_ok=True)
                if record is None or (expected is not None and _canonical(record.get("inputs"))
                                      != _canonical(expected[index])):
                    continue
                kept += 1
                order.add([_intern(record["taskId"]), record["repetition"], record.get("seed", 0), index])
                finished = record.get("finishedAt")
                events.add([finished or "", _intern(record["taskId"]), record["repetition"], index, finished is None,
                            _intern(record.get("suiteId")), _intern(record["status"])])
            ordered = (_load(paths[item[3]]) for item in order.sorted())
            publish(report_dir, (r for r in ordered if r is not None), kept,
                    header={**header, "voided": kept < len(paths)}, event_lines=_event_lines(events.sorted()),
                    work=work, line=record_line)
        finally:
            order.close()
            events.close()
    return kept


def _event_lines(items: Iterable[list[Any]]) -> Iterator[str]:
    """``run_finished`` events (``derived_events``) from sorted [ts or "", task, repetition, index, no ts, suite, status]."""
    for ts, task_id, repetition, _, no_ts, suite_id, status in items:
        yield dumps_line({"schema": EVENT_SCHEMA, "event": "run_finished", "ts": None if no_ts else ts,
                          "suiteId": suite_id, "taskId": task_id, "repetition": repetition, "status": status})


def _intern(value: Any) -> Any:
    """Strings repeated across records (task, suite, status) held once while sorted in memory."""
    return sys.intern(value) if isinstance(value, str) else value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _load(path: Path, *, missing_ok: bool = False) -> dict[str, Any] | None:
    try:
        text = read_text(path)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise LabError(f"{path}: the run record disappeared while its report was written") from None
    try:
        record = loads_json(text)
    except ValueError as exc:
        raise LabError(f"{path}: not a readable JSON run record: {exc}") from None
    if not isinstance(record, dict) or "taskId" not in record or "status" not in record:
        raise LabError(f"{path}: not a run record (no taskId or status)")
    return record
