"""Properties of the fault kinds: infrastructure errors are out of date, results are kept;
an unusable data dir is one DataDirError line; a corrupted dependency DB is set aside and rebuilt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.build.actions import RecordCurrent, is_result
from lab.build.depdb import DataDirError, LabSqliteDB, check_data_dir

SETTINGS = settings(max_examples=50, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
INPUTS = {"configHash": "c" * 64, "taskId": "t", "baseSeed": 0, "repetition": 0}
KINDS = ["provider", "workspace", "process", "verifier", "cassette", "lab", "internal", "replay_divergence"]


@given(status=st.sampled_from(["pass", "fail", "budget_exceeded", "error"]),
       kind=st.none() | st.sampled_from(KINDS))
@SETTINGS
def test_a_record_is_current_iff_it_holds_a_result(tmp_path: Path, status: str, kind: str | None) -> None:
    target = tmp_path / "s0-r0.json"
    record: dict[str, Any] = {"schemaVersion": 1, "status": status, "inputs": INPUTS,
                              "error": None if kind is None else {"kind": kind, "message": "m"}}
    target.write_text(json.dumps(record))
    infrastructure = status == "error" and kind != "replay_divergence"
    assert RecordCurrent(target, INPUTS)(None, {}) is (not infrastructure)
    assert is_result(record) is (not infrastructure)


@pytest.mark.parametrize(("status", "kind", "current"), [
    ("error", "provider", False), ("error", "internal", False), ("error", None, False),
    ("error", "replay_divergence", True), ("fail", None, True), ("budget_exceeded", None, True)])
def test_given_statuses(tmp_path: Path, status: str, kind: str | None, current: bool) -> None:
    target = tmp_path / "r.json"
    target.write_text(json.dumps({"status": status, "inputs": INPUTS,
                                  "error": kind and {"kind": kind, "message": "m"}}))
    assert RecordCurrent(target, INPUTS)(None, {}) is current


@given(depth=st.integers(min_value=0, max_value=3), name=st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=20))
@SETTINGS
def test_a_data_dir_at_or_below_a_file_is_one_line(tmp_path: Path, depth: int, name: str) -> None:
    if name in {".", ".."}:
        return
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    data = a_file.joinpath(*([name] * depth))
    with pytest.raises(DataDirError) as info:
        check_data_dir(data)
    message = str(info.value)
    assert message.startswith(f"data dir {data}: ") and "\n" not in message.replace(str(data), "")


@given(garbage=st.binary(min_size=1, max_size=2048))
@SETTINGS
def test_any_garbage_dependency_db_is_set_aside_and_rebuilt(tmp_path: Path, garbage: bytes,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from doit.dependency import JSONCodec

    db = tmp_path / ".doit.sqlite"
    db.write_bytes(garbage)
    backend = LabSqliteDB(str(db), codec=JSONCodec())
    backend.set("task", "key", "value")
    backend.dump()
    warnings = [line for line in capsys.readouterr().err.splitlines() if line]
    if (tmp_path / ".doit.sqlite.corrupt").exists():
        assert len(warnings) == 1 and "rebuilt from the run records" in warnings[0]
        (tmp_path / ".doit.sqlite.corrupt").unlink()
    again = LabSqliteDB(str(db), codec=JSONCodec())
    assert again.get("task", "key") == "value"
    again.dump()
    db.unlink()
