"""A variants command's JSON lines, and its reports found by their run ids: `lab compare`, `lab export`, `lab gate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.store import ReportError, find_run, report_files, resolve_report
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid


@pytest.mark.slow
def test_variants_json_lines_and_run_ids_that_work_in_compare_export_and_gate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main

    data, out = tmp_path / "runs", tmp_path / "cmp"
    result = run_cmd(["lab", "variants", "suite=smoke-coding", "variant=baseline,no-compaction",
                      "provider=scripted", "k=1", "tasks=[rename-symbol]", "json=true", f"out={out}"], data)
    assert result.returncode == 0, result.stdout + result.stderr
    # json=true: stdout is JSON lines only, each with a type (variant_report x2, then the comparison).
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["type"], line.get("variant")) for line in lines] == [
        ("variant_report", "baseline"), ("variant_report", "no-compaction"), ("comparison", None)]
    assert all(next(iter(line)) == "schemaVersion" for line in lines)
    for line in lines[:2]:
        assert_valid("report", line["report"], f"variant_report {line['variant']}")
        assert line["report"] == json.loads((Path(line["reportDir"]) / "report.json").read_text())
    assert_valid("comparison", lines[2]["comparison"], "comparison line")
    assert lines[2]["comparison"] == json.loads((out / "comparison.json").read_text())

    ids = [json.loads(p.read_text())["header"]["runId"]
           for p in sorted(data.glob("smoke-coding/variants/*/store/*/reports/*/report.json"))]
    assert len(ids) == 2 and ids[0] != ids[1]
    assert sorted(ids) == sorted(line["report"]["header"]["runId"] for line in lines[:2])
    bundle = tmp_path / "bundle.json"
    exported = run_cmd(["lab", "export", ids[0], f"out={bundle}"], data)
    assert exported.returncode == 0, exported.stderr
    exported_doc = json.loads(bundle.read_text())
    assert_valid("export", exported_doc, "bundle.json")
    assert exported_doc["report"]["header"]["runId"] == ids[0]
    # In-process (`lab export` above is the real process): the same entry point resolves the ids.
    monkeypatch.setenv("LAB_DATA_DIR", str(data))
    capsys.readouterr()
    assert main(["compare", ids[0], ids[1], "json=true"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert_valid("comparison", doc, "lab compare stdout")
    assert (doc["base"]["runId"], doc["cand"]["runId"]) == (ids[0], ids[1])
    assert main(["gate", ids[1], "min_pass_rate=0"]) == 0, capsys.readouterr()


def _report(root: Path, *parts: str) -> Path:
    where = root.joinpath(*parts, "report.json")
    where.parent.mkdir(parents=True)
    where.write_text("{}")
    return where


def test_report_files_finds_an_eval_and_a_variant_report(tmp_path: Path) -> None:
    plain = _report(tmp_path, "core", "v1.abc.scripted", "reports", "core.v1.abc.scripted.k1.s0")
    variant = _report(tmp_path, "core", "variants", "a_vs_b.k1.s0.123", "store", "a", "reports", "core.v1.def.k1.s0")
    _report(tmp_path, "core", "variants", "a_vs_b.k1.s0.123", "a")  # the comparison's copy is not a run's report
    assert report_files("core.v1.abc.scripted.k1.s0", tmp_path) == [plain]
    assert report_files("core.v1.def.k1.s0", tmp_path) == [variant]
    assert find_run("core.v1.def.k1.s0", tmp_path) == variant.parent
    assert resolve_report("core.v1.def.k1.s0", tmp_path) == variant


def test_a_run_id_in_two_variants_commands_names_both(tmp_path: Path) -> None:
    first = _report(tmp_path, "core", "variants", "a_vs_b.k1.s0.1", "store", "a", "reports", "core.v1.x.k1.s0")
    second = _report(tmp_path, "core", "variants", "a_vs_c.k1.s0.2", "store", "a", "reports", "core.v1.x.k1.s0")
    with pytest.raises(ReportError) as err:
        resolve_report("core.v1.x.k1.s0", tmp_path)
    assert str(first.parent) in str(err.value) and str(second.parent) in str(err.value)
    assert str(err.value).endswith("; give the path of the one you mean")
