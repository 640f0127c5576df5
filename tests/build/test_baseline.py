"""What a run store holds of a suite version, and when an eval must refuse to overwrite it (lab.build.baseline).

The end-to-end refusal (``lab run`` after a fixture edit, ``overwrite=true``)
is in tests/e2e/test_run_identity.py; here the store is built by hand.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.build.baseline import MARKER, check_baseline, remember_digest, stored_digest
from lab.errors import ConfigError
from lab.files import write_json
from tests.helpers.schemas import assert_valid

OLD, NEW = "a" * 64, "b" * 64


def put_record(store: Path, task: str, name: str, version: str, digest: str) -> None:
    write_json(store / "runs" / task / f"{name}.json",
               {"taskId": task, "status": "pass", "inputs": {"suiteVersion": version, "suiteDigest": digest}})


def put_report(store: Path, run_id: str, version: str, digest: str) -> None:
    write_json(store / "reports" / run_id / "report.json",
               {"schemaVersion": 1, "header": {"suiteVersion": version, "suiteDigest": digest}})


def prep(store: Path, *, digest: str = NEW, overwrite: bool = False, mode: str = "live") -> Any:
    suite = SimpleNamespace(id="demo", version="1.0.0", digest=digest, path=Path("/suites/demo"))
    config = SimpleNamespace(mode=mode, data={"overwrite": overwrite})
    return SimpleNamespace(store=store, ctx=SimpleNamespace(suite=suite, config=config))


def test_a_first_eval_and_an_unchanged_suite_proceed(tmp_path: Path) -> None:
    check_baseline(prep(tmp_path / "none-yet"))
    put_record(tmp_path, "t", "s0-r0", "1.0.0", NEW)
    check_baseline(prep(tmp_path))


def test_records_of_another_digest_are_refused_in_one_line_naming_both(tmp_path: Path) -> None:
    put_record(tmp_path, "t", "s0-r0", "1.0.0", OLD)
    with pytest.raises(ConfigError) as caught:
        check_baseline(prep(tmp_path))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("suite demo 1.0.0: its files changed but suiteVersion did not")
    assert f"suite digest {OLD[:12]} stored in {tmp_path}, {NEW[:12]} now" in message
    assert "bump suiteVersion in /suites/demo/suite.json" in message and "overwrite=true" in message
    check_baseline(prep(tmp_path, overwrite=True))  # knowingly
    check_baseline(prep(tmp_path, mode="record"))  # recording again is how cassettes follow the suite
    assert (tmp_path / "runs" / "t" / "s0-r0.json").exists()  # nothing deleted


def test_a_report_alone_is_a_baseline_too(tmp_path: Path) -> None:
    put_report(tmp_path, "demo.v1.0.0.x.k1.s0", "1.0.0", OLD)
    assert stored_digest(tmp_path, "1.0.0", NEW) == OLD


def test_results_of_another_version_are_not_this_versions_baseline(tmp_path: Path) -> None:
    put_record(tmp_path, "t", "s0-r0", "0.9.0", OLD)
    assert stored_digest(tmp_path, "1.0.0", NEW) is None


def test_the_marker_answers_without_reading_records_once_written(tmp_path: Path) -> None:
    put_record(tmp_path, "t", "s0-r0", "1.0.0", NEW)
    remember_digest(prep(tmp_path))
    doc = json.loads((tmp_path / MARKER).read_text(encoding="utf-8"))
    assert_valid("suite-digest", doc, MARKER)
    assert doc == {"schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0", "suiteDigest": NEW}
    put_record(tmp_path, "t", "s0-r0", "1.0.0", OLD)  # not read: the marker names this digest
    assert stored_digest(tmp_path, "1.0.0", NEW) is None
    assert stored_digest(tmp_path, "1.0.0", "c" * 64) == OLD  # another digest now: the records decide


def test_a_stale_marker_with_no_results_left_proceeds(tmp_path: Path) -> None:
    remember_digest(prep(tmp_path, digest=OLD))  # results made at OLD, then removed (doit clean)
    assert stored_digest(tmp_path, "1.0.0", NEW) is None


def test_unreadable_or_foreign_files_hold_no_baseline(tmp_path: Path) -> None:
    (tmp_path / "runs" / "t").mkdir(parents=True)
    (tmp_path / "runs" / "t" / "s0-r0.json").write_text("{not json")
    (tmp_path / "runs" / "t" / "s0-r1.json").write_text("[1, 2]")
    (tmp_path / MARKER).write_text("\x00")
    assert stored_digest(tmp_path, "1.0.0", NEW) is None


ENTRY = st.tuples(st.sampled_from(["record", "report"]), st.sampled_from(["1.0.0", "1.1.0"]),
                  st.sampled_from([OLD, NEW]))


@settings(max_examples=30, deadline=None)
@given(entries=st.lists(ENTRY, max_size=6), marker=st.none() | st.sampled_from([OLD, NEW]))
def test_refused_exactly_when_this_version_has_results_of_another_digest(
        entries: list[tuple[str, str, str]], marker: str | None) -> None:
    store = Path(tempfile.mkdtemp())
    try:
        for n, (kind, version, digest) in enumerate(entries):
            if kind == "record":
                put_record(store, f"t{n % 2}", f"s0-r{n}", version, digest)
            else:
                put_report(store, f"run{n}", version, digest)
        if marker is not None:
            remember_digest(prep(store, digest=marker))
        other = [d for _, v, d in entries if v == "1.0.0" and d != NEW]
        # the marker speaks for the store only when it names this digest (written by an eval that passed)
        expected = None if marker == NEW else (other[0] if other else None)
        assert stored_digest(store, "1.0.0", NEW) == expected
    finally:
        shutil.rmtree(store)
