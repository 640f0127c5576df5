"""What a command remembers of each run record (lab.build.records.RecordIndex): judged by one stat,
read again whenever the record or its directory changed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from lab.build.records import RecordCurrent, RecordIndex, forgotten_marker, records_digest
from lab.canonical import canonical_hash

OLD_S = 1_000_000_000
INPUTS = {"configHash": "c" * 64, "taskId": "t", "repetition": 0, "baseSeed": 0}


def write_record(path: Path, **fields: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schemaVersion": 1, "status": "pass", "inputs": INPUTS,
                                "runtime": {"jobs": 1}, **fields}), encoding="utf-8")
    for p in (path, path.parent):
        os.utime(p, (OLD_S, OLD_S))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def remembered(store: Path, record: Path) -> RecordIndex:
    index = RecordIndex(store, store.parent / "index.json")
    assert RecordCurrent(record, INPUTS, index)(None, {})
    index.save()
    return RecordIndex(store, store.parent / "index.json")


def test_a_remembered_record_is_judged_without_reading_it(store: Path) -> None:
    record = write_record(store / "runs" / "t" / "s0-r0.json")
    remembered(store, record)
    doc = json.loads((store.parent / "index.json").read_text(encoding="utf-8"))
    doc["records"][str(record)][1] = canonical_hash({"other": "inputs"})  # plant: the index is believed
    (store.parent / "index.json").write_text(json.dumps(doc), encoding="utf-8")
    index = RecordIndex(store, store.parent / "index.json")
    assert not RecordCurrent(record, INPUTS, index)(None, {})
    assert RecordCurrent(record, {"other": "inputs"}, index)(None, {})


@pytest.mark.parametrize("status, current", [("pass", True), ("error", False)])
def test_the_index_judges_as_reading_does(store: Path, status: str, current: bool) -> None:
    record = write_record(store / "runs" / "t" / "s0-r0.json", status=status)
    index = RecordIndex(store, store.parent / "index.json")
    assert RecordCurrent(record, INPUTS, index)(None, {}) is current
    assert RecordCurrent(record, INPUTS)(None, {}) is current
    index.save()
    assert RecordCurrent(record, INPUTS, RecordIndex(store, store.parent / "index.json"))(None, {}) is current
    assert not RecordCurrent(record, {**INPUTS, "repetition": 1}, index)(None, {})


def test_an_edit_that_keeps_size_and_mtime_is_read_again(store: Path) -> None:
    record = write_record(store / "runs" / "t" / "s0-r0.json")
    index = remembered(store, record)
    write_record(record, status="fail")  # same length as "pass"; mtime put back
    facts = index.facts(record)
    assert facts is not None and facts.result is True  # fail is a result too: compare the digest
    assert facts.sha256 == hashlib.sha256(record.read_bytes()).hexdigest()


def test_a_forget_marker_added_later_makes_the_record_out_of_date(store: Path) -> None:
    record = write_record(store / "runs" / "t" / "s0-r0.json")
    index = remembered(store, record)
    forgotten_marker(record).touch()
    os.utime(record.parent, (OLD_S, OLD_S))  # even with the directory's mtime put back
    assert not RecordCurrent(record, INPUTS, index)(None, {})


def test_a_missing_record_is_not_current(store: Path) -> None:
    record = write_record(store / "runs" / "t" / "s0-r0.json")
    index = remembered(store, record)
    record.unlink()
    assert not RecordCurrent(record, INPUTS, index)(None, {})
    assert index.facts(record) is None


def test_the_report_digest_is_the_same_with_the_index(store: Path) -> None:
    records = [write_record(store / "runs" / "t" / f"s0-r{i}.json", repetition=i) for i in range(3)]
    records.append(store / "runs" / "t" / "s0-r3.json")  # not run
    header = {"runId": "x"}
    index = RecordIndex(store, store.parent / "index.json")
    assert records_digest(records, header, index) == records_digest(records, header)
    index.save()
    assert records_digest(records, header, RecordIndex(store, store.parent / "index.json")) == \
        records_digest(records, header)


@pytest.mark.parametrize("content", [b"nonsense", b'{"schemaVersion": 1, "kind": "run-record-index", "store": "/x",'
                                                   b' "records": {}}'])
def test_a_corrupt_or_foreign_index_is_ignored(store: Path, content: bytes) -> None:
    record = write_record(store / "runs" / "t" / "s0-r0.json", status="error")
    (store.parent / "index.json").write_bytes(content)
    assert not RecordCurrent(record, INPUTS, RecordIndex(store, store.parent / "index.json"))(None, {})
