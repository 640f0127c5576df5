"""Typed summaries of an eval for programs (the Python API): from a report, or from run records.

:func:`summarise_records` turns existing run records (``run-record.schema.json``;
dicts, record files, ``runs.jsonl`` files or directories of them) into an
:class:`EvalSummary`, after validating every record and checking that they all
measure one suite, one suite version and digest, and one configuration.
``lab.build.api.run_eval`` returns the same type for a fresh eval.

Attempts are numbered from **1** here (``Attempt.attempt``), whatever the
files use: run records and reports count repetitions from 0
(``attempt = repetition + 1``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.errors import LabError, RecordVersionError
from lab.files import loads_json, read_text, split_lines
from lab.report.build import build_report, sort_records

RECORD_SCHEMA_VERSION = 1
Source = dict[str, Any] | Path | str


class IncompatibleRecords(LabError):
    """Run records of another suite, suite version or digest, or configuration; or a run given twice."""


@dataclass(frozen=True)
class Attempt:
    """One run of one task. ``attempt`` counts from 1 (= the record's ``repetition`` + 1).

    ``verifiers`` maps verifier id to pass / fail / error; ``score`` is in [0, 1] or None;
    ``wall_ms`` in milliseconds; ``record`` is the full run record as written.
    """

    task_id: str
    attempt: int
    seed: int
    status: str
    claim: str
    score: float | None
    wall_ms: int | None
    verifiers: dict[str, str]
    error_kind: str | None
    record: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Attempt:
        """The attempt of a run record (``run-record.schema.json``)."""
        return cls(task_id=record["taskId"], attempt=int(record["repetition"]) + 1, seed=int(record["seed"]),
                   status=record["status"], claim=record.get("claim", "none"), score=record.get("score"),
                   wall_ms=record.get("wallMs"),
                   verifiers={v["id"]: v["status"] for v in record.get("verifiers", [])},
                   error_kind=(record.get("error") or {}).get("kind"), record=record)


@dataclass(frozen=True)
class TaskSummary:
    """One task's figures (report ``tasks[]``): rates are fractions in [0, 1], None when nothing was judged."""

    task_id: str
    runs: int
    judged: int
    passes: int
    errors: int
    success_rate: float | None
    wilson95: tuple[float, float] | None
    pass_at_k: float | None
    pass_hat_k: float | None
    flaky: bool
    low_power: bool


@dataclass(frozen=True)
class EvalSummary:
    """An eval's conditions and figures (``report.json``), with typed tasks and attempts.

    ``wilson95`` is None when nothing was judged and in replay; ``exit_code`` is the
    SPEC exit code of a fresh eval (None for :func:`summarise_records`);
    ``report_dir`` is where the report was published (None when summarised from records).
    ``report`` is the whole report document.
    """

    suite_id: str
    suite_version: str
    suite_digest: str
    config_hash: str
    mode: str
    provider: str
    model: str
    k: int
    seed: int
    run_id: str | None
    runs: int
    judged: int
    passes: int
    errors: int
    success_rate: float | None
    wilson95: tuple[float, float] | None
    pass_at_k: float | None
    pass_hat_k: float | None
    false_positives: int
    false_negatives: int
    tasks: tuple[TaskSummary, ...]
    attempts: tuple[Attempt, ...]
    report: dict[str, Any] = field(repr=False, compare=False)
    report_dir: Path | None = None
    exit_code: int | None = None


def _interval(value: list[float] | None) -> tuple[float, float] | None:
    return None if value is None else (float(value[0]), float(value[1]))


def summary_from_report(doc: dict[str, Any], records: Iterable[dict[str, Any]], *,
                        report_dir: Path | None = None, exit_code: int | None = None) -> EvalSummary:
    """The :class:`EvalSummary` of a report document and the run records it was built from."""
    h, s = doc["header"], doc["summary"]
    tasks = tuple(TaskSummary(task_id=t["taskId"], runs=t["runs"], judged=t["judged"], passes=t["passes"],
                              errors=t["errors"], success_rate=t["successRate"], wilson95=_interval(t["wilson95"]),
                              pass_at_k=t["passAtK"], pass_hat_k=t["passHatK"], flaky=t["flaky"],
                              low_power=t["lowPower"]) for t in doc["tasks"])
    return EvalSummary(
        suite_id=h["suiteId"], suite_version=h["suiteVersion"], suite_digest=h["suiteDigest"],
        config_hash=h["configHash"], mode=h["mode"], provider=h["provider"], model=h["model"], k=int(h["k"]),
        seed=int(h["seed"]), run_id=h.get("runId"), runs=s["runs"], judged=s["judged"], passes=s["passes"],
        errors=s["errors"], success_rate=s["successRate"], wilson95=_interval(s["wilson95"]),
        pass_at_k=s["passAtK"], pass_hat_k=s["passHatK"], false_positives=s["falsePositives"],
        false_negatives=s["falseNegatives"], tasks=tasks,
        attempts=tuple(Attempt.from_record(r) for r in sort_records(records)),
        report=doc, report_dir=report_dir, exit_code=exit_code)


def summarise_records(source: Source | Iterable[Source], *, suite_id: str | None = None,
                      suite_version: str | None = None, config_hash: str | None = None) -> EvalSummary:
    """Summarise existing run records, as a report of them would (SPEC M1–M7).

    Args:
        source: a run record (dict), a record file (``.json``), a ``runs.jsonl``
            (one record per line, as in a report directory), a directory (its
            ``runs.jsonl``, else every ``s<seed>-r<i>.json`` below it), or an
            iterable of those.
        suite_id, suite_version, config_hash: when given, every record must
            match (a config hash may be given as its first 12 characters).

    Returns:
        An :class:`EvalSummary`; ``k`` is the most attempts of any task, ``seed``
        the smallest base seed; attempts count from 1.

    Raises:
        LabError: no record, an unreadable file, or a record that does not
            match ``run-record.schema.json`` (names the source and the field).
        RecordVersionError: a record newer than this lab reads.
        IncompatibleRecords: records of different suites, suite versions or
            digests, or configurations (or not the ones asked for), or the
            same run (task, base seed, repetition) twice.
    """
    records = list(_validated(source))
    if not records:
        raise LabError("summarise_records: no run record found")
    _check_one_eval(records, {"suiteId": suite_id, "suiteVersion": suite_version, "configHash": config_hash})
    first = records[0]
    k = max(sum(1 for r in records if r["taskId"] == t) for t in {r["taskId"] for r in records})
    header = {"suiteId": first["suiteId"], "suiteVersion": first["suiteVersion"],
              "suiteDigest": first["suiteDigest"], "harnessDigest": first["harnessDigest"],
              "configHash": first["configHash"], "provider": first["provider"], "model": first["model"],
              "mode": first["mode"], "k": k, "seed": min(int(r["baseSeed"]) for r in records)}
    return summary_from_report(build_report(header, records), records)


def _sources(source: Source | Iterable[Source]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) for every record of ``source``."""
    if isinstance(source, dict):
        yield "record", source
    elif isinstance(source, (str, Path)):
        yield from _from_path(Path(source))
    else:
        for item in source:
            yield from _sources(item)


def _from_path(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if path.is_dir() and path.suffix not in (".json", ".jsonl"):  # a record file's name: refused below
        runs = path / "runs.jsonl"
        files = [runs] if runs.is_file() else sorted(path.rglob("s*-r*.json"))
        for file in files:
            yield from _from_path(file)
        return
    try:
        text = read_text(path)
        if path.suffix == ".jsonl":
            for n, line in enumerate(split_lines(text), 1):  # JSON Lines break at \n only
                if line.strip():
                    try:
                        record = loads_json(line)
                    except ValueError as exc:
                        raise LabError(f"{path}:{n}: not readable JSON: {exc}") from None
                    yield f"{path}:{n}", record
        else:
            yield str(path), loads_json(text)
    except OSError as exc:
        raise LabError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise LabError(f"{path}: not readable JSON: {exc}") from None


def _validated(source: Source | Iterable[Source]) -> Iterator[dict[str, Any]]:
    import jsonschema

    from lab.schemas import load_schema

    validator = jsonschema.Draft202012Validator(load_schema("run-record"))
    for where, record in _sources(source):
        version = record.get("schemaVersion") if isinstance(record, dict) else None
        if isinstance(version, int) and version > RECORD_SCHEMA_VERSION:
            raise RecordVersionError(f"{where}: run record schemaVersion {version} is newer than this lab "
                                     f"reads ({RECORD_SCHEMA_VERSION})")
        error = next(iter(sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))), None)
        if error is not None:
            place = "/".join(map(str, error.absolute_path)) or "(record)"
            raise LabError(f"{where}: not a run record: {place}: {error.message}")
        yield record


def _check_one_eval(records: list[dict[str, Any]], wanted: dict[str, str | None]) -> None:
    first = records[0]
    for key, what in (("suiteId", "suite"), ("suiteVersion", "suite version"), ("suiteDigest", "suite digest"),
                      ("configHash", "configuration")):
        expected = wanted.get(key)
        if expected is not None and not str(first[key]).startswith(expected):
            raise IncompatibleRecords(f"records of {what} {first[key]}, expected {expected}")
        other = next((r for r in records if r[key] != first[key]), None)
        if other is not None:
            raise IncompatibleRecords(
                f"records of another {what}: task {other['taskId']} repetition {other['repetition']} has "
                f"{key} {other[key]}, the first record {first[key]}; summarise one eval at a time")
    seen: set[tuple[str, int, int]] = set()
    for r in records:
        key3 = (r["taskId"], int(r["baseSeed"]), int(r["repetition"]))
        if key3 in seen:
            raise IncompatibleRecords(f"task {key3[0]} attempt {key3[2] + 1} (base seed {key3[1]}) is given twice")
        seen.add(key3)
