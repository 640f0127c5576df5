"""Find and read published reports in the run store.

The run store keeps each report at
``<data dir>/<suiteId>/<store key>/reports/<runId>/report.json`` (DESIGN.md), and
a variants command each variant's at
``<data dir>/<suiteId>/variants/<command>/store/<label>/reports/<runId>/report.json``.
A command that takes a report (``lab compare``, ``admit``, ``gate``, ``plan``,
``export``; ``doit compare``, ``doit export``) accepts a ``report.json`` path, its
directory, or a run id (``<suiteId>.v<version>.<cfg12>.<endpoint>.k<k>.s<seed>``) found
in either place; :func:`resolve_report` turns any of them into the report file, and
:func:`load_report` into a checked report document.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from lab.errors import LabError, RecordVersionError
from lab.files import loads_json, read_text

REPORT_SCHEMA_VERSION = 1
PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class ReportError(LabError):
    """A report could not be found or is not a valid report document."""


@dataclass(frozen=True)
class StoredReport:
    """A report read from disk.

    Attributes:
        report_dir: the directory holding ``report.json`` (and usually
            ``report.md``, ``runs.jsonl``).
        doc: the parsed, schema-checked ``report.json``.
    """

    report_dir: Path
    doc: dict[str, Any]

    @property
    def run_dir(self) -> Path | None:
        """The run-store directory the report was published from (:func:`store_dir`), or None."""
        return store_dir(self.report_dir, self.doc.get("header", {}).get("runId"))


def is_plain_name(name: str) -> bool:
    """Whether ``name`` is a plain run id: ``^[A-Za-z0-9][A-Za-z0-9._-]*$``, no ``..``."""
    return bool(PLAIN_NAME.match(name)) and ".." not in name


def report_files(run_id: str, data: Path) -> list[Path]:
    """Every ``report.json`` of the plain run id ``run_id`` under ``data``: an eval's
    (``<suite>/<store key>/reports/<run id>/``) and a variants command's
    (``<suite>/variants/<command>/store/<label>/reports/<run id>/``), sorted."""
    return sorted([*data.glob(f"*/*/reports/{run_id}/report.json"),
                   *data.glob(f"*/variants/*/store/*/reports/{run_id}/report.json")])


def store_dir(report_dir: Path, run_id: object) -> Path | None:
    """The run-store directory a report directory was published from, as an absolute path.

    ``<X>`` for ``<X>/reports/<run id>/`` (an eval's ``<data>/<suite>/<store key>``, or a
    variant's ``…/variants/<command>/store/<label>``); for the copy a variants command
    keeps at ``<command>/<label>/``, the variant's store ``<command>/store/<label>`` when
    it holds the report of ``run_id`` (the ``runId`` of the report's header). None for a
    report anywhere else (a copy, a variants command's ``out=DIR``): it has no store.
    """
    report_dir = Path(os.path.abspath(report_dir))  # "." and "x/.." have no name to walk up from
    if report_dir.parent.name == "reports":
        return report_dir.parent.parent
    store = report_dir.parent / "store" / report_dir.name
    if isinstance(run_id, str) and is_plain_name(run_id) and (store / "reports" / run_id / "report.json").is_file():
        return store
    return None


def find_run(run_id: str, data: Path) -> Path:
    """The report directory of ``run_id`` in the run store rooted at ``data`` (an eval's or a variant's).

    Raises:
        ReportError: ``run_id`` is not a plain name, or no (or more than one)
            report of that id exists (:func:`report_files`); several are named,
            so the user can give one's path instead.
    """
    if not is_plain_name(run_id):
        raise ReportError(f"run id {run_id!r} is not a plain name "
                          "(letters, digits, '.', '_', '-'; no '/' or '..')")
    hits = report_files(run_id, data)
    if not hits:
        raise ReportError(f"no report for run id {run_id!r} under {data}")
    if len(hits) > 1:
        raise ReportError(f"run id {run_id!r} names {len(hits)} reports under {data}: "
                          + ", ".join(str(h.parent) for h in hits) + "; give the path of the one you mean")
    return hits[0].parent


def resolve_report(ref: str, data: Path) -> Path:
    """The ``report.json`` that ``ref`` names: a file, its directory, or a run id.

    A path that exists wins over a run id of the same spelling. The path is
    returned as given (relative when ``ref`` is), ``report.json`` appended to a directory.

    Raises:
        ReportError: ``ref`` is empty, or nothing of that name exists (a run id
            naming several reports lists them: :func:`find_run`).
    """
    if not ref.strip():
        raise ReportError("no report given: expected a report.json, its directory or a run id")
    path = Path(ref).expanduser()
    if path.is_dir():
        if not (path / "report.json").is_file():
            raise ReportError(f"{path}: no report.json in this directory")
        return path / "report.json"
    if path.is_file():
        return path
    hits = report_files(ref, data) if is_plain_name(ref) else []
    if len(hits) == 1:
        return hits[0]
    if hits:
        return find_run(ref, data) / "report.json"  # raises: the id is ambiguous
    raise ReportError(f"{ref}: no such report file, directory or run id (run store {data})")


def read_report(path: Path) -> dict[str, Any]:
    """Parse ``path`` and check it against the report schema (``lab/schemas/report.schema.json``).

    Raises:
        ReportError: unreadable, not JSON, or not a report; names the file
            and the first failing field.
        RecordVersionError: written by a newer lab (schemaVersion > 1).
    """
    try:
        doc = loads_json(read_text(path))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a JSON file: {exc}") from exc
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a report: expected a JSON object")
    version = doc.get("schemaVersion")
    if isinstance(version, int) and not isinstance(version, bool) and version > REPORT_SCHEMA_VERSION:
        raise RecordVersionError(f"{path}: report schemaVersion {version} is newer than this lab reads "
                                 f"({REPORT_SCHEMA_VERSION})")
    from lab.schemas import load_schema

    # The full report schema: every figure compare, admit, gate and export read is checked
    # here, so a hand-made or damaged report is one line naming the field, never a crash.
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(load_schema("report")).iter_errors(doc))
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "(top level)"
        raise ReportError(f"{path}: not a report: {where}: {error.message[:200]}")
    return doc


def load_report(ref: str, data: Path) -> StoredReport:
    """:func:`resolve_report` then :func:`read_report`; the errors of both."""
    path = resolve_report(ref, data)
    return StoredReport(report_dir=path.parent, doc=read_report(path))
