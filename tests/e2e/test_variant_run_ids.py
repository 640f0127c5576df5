"""A variants command's reports are found by their run ids: `lab compare`, `lab export`, `lab gate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.store import ReportError, find_run, report_files, resolve_report
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid


@pytest.mark.slow
def test_variant_run_ids_work_in_compare_export_and_gate(tmp_path: Path) -> None:
    data = tmp_path / "runs"
    result = run_cmd(["lab", "variants", "suite=smoke-coding", "variant=baseline,no-compaction",
                      "provider=scripted", "k=1", "tasks=[rename-symbol]"], data)
    assert result.returncode == 0, result.stdout + result.stderr
    ids = [json.loads(p.read_text())["header"]["runId"]
           for p in sorted(data.glob("smoke-coding/variants/*/store/*/reports/*/report.json"))]
    assert len(ids) == 2 and ids[0] != ids[1]
    compared = run_cmd(["lab", "compare", ids[0], ids[1], "json=true"], data)
    assert compared.returncode == 0, compared.stderr
    doc = json.loads(compared.stdout)
    assert_valid("comparison", doc, "lab compare stdout")
    assert (doc["base"]["runId"], doc["cand"]["runId"]) == (ids[0], ids[1])
    bundle = tmp_path / "bundle.json"
    exported = run_cmd(["lab", "export", ids[0], f"out={bundle}"], data)
    assert exported.returncode == 0, exported.stderr
    exported_doc = json.loads(bundle.read_text())
    assert_valid("export", exported_doc, "bundle.json")
    assert exported_doc["report"]["header"]["runId"] == ids[0]
    gated = run_cmd(["lab", "gate", ids[1], "min_pass_rate=0"], data)
    assert gated.returncode == 0, gated.stdout + gated.stderr


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
