"""Per-attempt evidence: each run of a report gets a directory of its own, ``attempts/<taskId>/<NNNN>/``.

The directory holds two files:

- ``index.html``: the run's page — status, facts, final message, error,
  replay divergence, verifiers with their diagnostics and the event log
  (the same evidence section as on index.html or a run page,
  ``templates/_run.html.j2``, framed by ``templates/attempt.html.j2``);
- ``evaluation.json``: the run's full record, exactly the ``runs.jsonl``
  line of the run (one line of JSON, ``run-record.schema.json``). It is the
  record as the data dir holds it: a report is built from the stored
  records, which were redacted before they were stored, and nothing is
  added or removed on the way.

Numbering: ``<NNNN>`` is the run's repetition index plus one, zero-padded to
four digits (``0001`` is repetition 0; past 9999 the number simply grows), in
a directory per task. A run keeps its number when its report is rebuilt and
when k is raised (new repetitions get new numbers after the old ones), and
one task's numbers do not depend on any other task's runs. A directory per
task also keeps every directory small: a 100k-run report over 50 tasks has
50 directories of 2000 attempts each rather than one of 100k.

The files are written while the records stream (one run at a time, nothing
kept) into the report's staging directory, so they appear with the rest of
the report when it is renamed into place.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from lab.errors import LabError
from lab.files import encodable

ATTEMPTS_DIR = "attempts"
PAGE = "index.html"
RECORD = "evaluation.json"
_MARK = "\x00attempt\x00"
_SECTION = "\x00section\x00"


def attempt_number(repetition: int) -> str:
    """The attempt's directory name: repetition index (0-based) + 1, at least four digits (``0001``)."""
    return f"{repetition + 1:04d}"


def attempt_dir(task_id: str, repetition: int) -> str:
    """The attempt's directory relative to the report directory: ``attempts/<taskId>/<NNNN>``."""
    return f"{ATTEMPTS_DIR}/{task_id}/{attempt_number(repetition)}"


class AttemptPages:
    """Writes ``attempts/<taskId>/<NNNN>/{index.html,evaluation.json}`` under ``report_dir``, one run at a time.

    Args:
        report_dir: the (staging) report directory.
        title: the report's title prefix (``<suite> <version>``).
        templates: the report templates (``lab.report.evidence.environment``), for ``attempt.html.j2``.
    """

    def __init__(self, report_dir: Path, title: str, templates: jinja2.Environment) -> None:
        self._root = report_dir
        self._task_dir: Path | None = None
        self._seeds: dict[tuple[str, int], Any] = {}  # the last run's, for the message of a duplicate
        page = {"title": Markup(f"{Markup.escape(title)} — {_MARK}"), "heading": Markup(_MARK),
                "index": "../../../index.html", "record": RECORD, "evidence": [Markup(_SECTION)]}
        head, _, self._tail = templates.get_template("attempt.html.j2").render(page=page).partition(_SECTION)
        self._head = head.split(_MARK)  # [before the title, between its two places, after]

    def write(self, record: dict[str, Any], record_text: str, section: str) -> None:
        """Write one run's directory.

        Args:
            record: the run record (for its task id, repetition and status).
            record_text: the record's ``runs.jsonl`` line (written as ``evaluation.json``).
            section: the run's evidence section, its links already relative to the attempt page.

        Raises:
            LabError: a second record of the same run (task and repetition).
            OSError: the directory cannot be written.
        """
        task_id, repetition = record["taskId"], record["repetition"]
        task_dir = self._root / ATTEMPTS_DIR / task_id
        if task_dir != self._task_dir:  # records come in report order: one makedirs per task
            task_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
            self._task_dir = task_dir
        directory = task_dir / attempt_number(repetition)
        try:
            directory.mkdir(mode=0o755)
        except FileExistsError:
            raise LabError(f"two run records of task {task_id} repetition {repetition} in one report "
                           f"(seeds {self._seeds.get((task_id, repetition))} and {record.get('seed')}): "
                           "a report holds one record per run") from None
        self._seeds = {(task_id, repetition): record.get("seed")}
        title = str(Markup.escape(f"{task_id} attempt {attempt_number(repetition)} (r{repetition}) — "
                                  f"{record['status']}"))
        _write_text(directory / PAGE, title.join(self._head) + section + self._tail)
        _write_text(directory / RECORD, record_text)


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 to a new file: one open, one write, no buffer.

    A lone surrogate (valid in JSON, not in UTF-8) becomes U+FFFD, as in
    every other report file (``lab.files.encodable``); the scan for one is
    made only when encoding fails.
    """
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        encoded = encodable(text).encode("utf-8")
    data = memoryview(encoded)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
