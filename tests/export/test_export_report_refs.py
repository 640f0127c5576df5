"""A report named by its path wherever a command takes a report: `lab export` and `doit export` as
`lab compare` (one resolution, lab.store.resolve_report), in particular when a run id is ambiguous.

The store built here holds one run id three times, as an eval followed by a variants command
makes it: the eval's report, the variant's report in the variants command's store, and the
copy the variants command keeps beside its comparison (``<command>/<variant>/``).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.export.bundle import export_run
from lab.report import build_report, write_report
from lab.store import ReportError, load_report
from tests.helpers.lab_process import run_cmd
from tests.helpers.reports import make_header, make_records, write_report_dir
from tests.helpers.schemas import assert_valid


@dataclass(frozen=True)
class Store:
    data: Path
    run_id: str
    eval_dir: Path  # <data>/toy/<cfg12>/reports/<run id>
    variant_dir: Path  # <data>/toy/variants/<command>/store/a/reports/<run id>
    variant_copy: Path  # <data>/toy/variants/<command>/a


def _records(store_dir: Path, tasks: dict[str, str]) -> list[dict[str, Any]]:
    records = make_records(tasks)
    for record in records:
        record["workspace"] = str(store_dir / "work" / record["taskId"] / f"r{record['repetition']}")
    return records


def ambiguous_store(data: Path) -> Store:
    """One run id published by an eval and by a variants command (whose variant ``a`` has the
    same measured configuration), with different results; each run names its workspace."""
    header = make_header(k=2)
    eval_records = _records(data / "toy" / header["configHash"][:12], {"a": "PP", "b": "PF"})
    eval_dir = write_report_dir(data, build_report(header, eval_records), eval_records)
    command = data / "toy" / "variants" / "a_vs_b.k2.s0.0123456789ab"
    variant_records = _records(command / "store" / "a", {"a": "PF", "b": "FF"})
    variant_dir = command / "store" / "a" / "reports" / header["runId"]
    write_report(variant_dir, build_report(header, variant_records), variant_records)
    shutil.copytree(variant_dir, command / "a")
    return Store(data, header["runId"], eval_dir, variant_dir, command / "a")


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    return ambiguous_store(tmp_path / "data")


def export_text(ref: str, store: Store, out: Path) -> str:
    """The bundle ``lab export REF`` writes, as text (``out`` overwritten)."""
    result = export_run(ref, out, data=store.data, env={}, home=Path("/nonexistent-home"), force=True)
    assert result.run_id == store.run_id and result.runs == 4
    return out.read_text(encoding="utf-8")


def test_an_ambiguous_run_id_is_refused_and_each_path_is_exported(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ReportError) as err:
        export_run(store.run_id, tmp_path / "b.json", data=store.data, env={})
    assert f"names 2 reports under {store.data}" in str(err.value)
    assert str(store.eval_dir) in str(err.value) and str(store.variant_dir) in str(err.value)
    assert str(err.value).endswith("give the path of the one you mean") and not (tmp_path / "b.json").exists()

    by_eval = json.loads(export_text(str(store.eval_dir), store, tmp_path / "b.json"))
    assert_valid("export", by_eval, "eval bundle")
    assert [r["status"] for r in by_eval["runs"]] == ["pass", "pass", "pass", "fail"]
    by_variant = export_text(str(store.variant_dir), store, tmp_path / "b.json")
    assert [r["status"] for r in json.loads(by_variant)["runs"]] == ["pass", "fail", "fail", "fail"]
    # The variants command's copy is the variant's report: the same bundle, its workspaces under
    # the variant's store <run-dir>, nothing of the machine's paths.
    assert export_text(str(store.variant_copy), store, tmp_path / "b.json") == by_variant
    assert json.loads(by_variant)["runs"][1]["workspace"] == "<run-dir>/work/a/r1"
    assert str(tmp_path) not in by_variant


def test_a_report_copied_out_of_the_run_store_has_no_run_dir(store: Store, tmp_path: Path) -> None:
    copy = tmp_path / "shared" / "reports-of-last-week" / "x"
    shutil.copytree(store.eval_dir, copy)
    out = tmp_path / "b.json"
    export_run(str(copy / "report.json"), out, data=store.data, env={}, home=Path("/nonexistent-home"),
               tmp=Path("/nonexistent-tmp"))
    text = out.read_text(encoding="utf-8")
    assert "<run-dir>" not in text and str(tmp_path) not in text  # its paths are any other path's
    workspace = json.loads(text)["runs"][0]["workspace"]
    assert workspace.startswith("<path>/") and workspace.endswith("/a/r0")


def _spelling(target: Path, cwd: Path, relative: bool, detour: int | None, dot: int | None,
              form: str) -> str:
    """``target`` (a report dir) written another way: relative to ``cwd``, with a detour
    (``…/x/../x/…``) or a ``.`` component inserted, as the directory, ``DIR/`` or ``DIR/report.json``."""
    parts = list(Path(os.path.relpath(target, cwd)).parts if relative else target.parts)
    if detour is not None:
        at = 1 + detour % (len(parts) - 1)  # never before the first part (the root of an absolute path)
        parts[at:at] = [parts[at], ".."]
    if dot is not None:
        parts.insert(1 + dot % len(parts), ".")
    text = os.path.join(*parts)
    return {"dir": text, "dir/": text + "/", "file": os.path.join(text, "report.json")}[form]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(["eval_dir", "variant_dir", "variant_copy"]), relative=st.booleans(),
       detour=st.none() | st.integers(0, 20), dot=st.none() | st.integers(0, 20),
       form=st.sampled_from(["dir", "dir/", "file"]))
def test_every_spelling_of_a_report_path_exports_what_compare_reads(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, relative: bool,
        detour: int | None, dot: int | None, form: str) -> None:
    monkeypatch.chdir(tmp_path)
    report_dir: Path = getattr(store, target)
    expected = export_text(str(report_dir), store, tmp_path / "expected.json")
    ref = _spelling(report_dir, tmp_path, relative, detour, dot, form)
    assert export_text(ref, store, tmp_path / "b.json") == expected, ref
    assert load_report(ref, store.data).doc == json.loads((report_dir / "report.json").read_text())


@pytest.mark.parametrize("argv", [["compare", "{ref}", "{ref}"], ["admit", "{ref}", "{ref}"], ["gate", "{ref}"],
                                  ["plan", "{ref}", "delta=0.3"], ["export", "{ref}", "out={out}", "force=true"]])
def test_every_command_taking_a_report_takes_its_path_and_names_an_ambiguous_id(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        argv: list[str]) -> None:
    from lab.cli import main

    monkeypatch.setenv("LAB_DATA_DIR", str(store.data))
    out = tmp_path / "b.json"
    assert main([a.format(ref=store.run_id, out=out) for a in argv]) == 1
    assert "give the path of the one you mean" in capsys.readouterr().err
    for ref in (store.eval_dir, store.eval_dir / "report.json", store.variant_copy):
        main([a.format(ref=ref, out=out) for a in argv])  # the exit code is the command's verdict
        assert capsys.readouterr().err == "", ref


def test_doit_export_takes_a_report_path(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.build import compare_export

    monkeypatch.setenv("LAB_DATA_DIR", str(store.data))
    out = tmp_path / "b.json"
    monkeypatch.setattr(compare_export, "cmdline_overrides", lambda: [f"run={store.run_id}", f"out={out}"])
    with pytest.raises(ReportError, match="give the path of the one you mean"):
        compare_export._export_spec()
    monkeypatch.setattr(compare_export, "cmdline_overrides", lambda: [f"run={store.variant_copy}", f"out={out}"])
    spec = compare_export._export_spec()
    assert spec == (store.variant_copy / "report.json", out, False, False, store.run_id)
    (task,) = compare_export._export_tasks(*spec)
    assert task["name"] == store.run_id and str(store.variant_copy / "runs.jsonl") in task["file_dep"]
    assert compare_export._export_action(*spec[:4]) is None
    assert out.read_text() == export_text(str(store.variant_dir), store, tmp_path / "expected.json")


def test_cli_exports_the_report_path_an_ambiguous_run_id_asks_for(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "bundle.json"
    refused = run_cmd(["lab", "export", store.run_id, f"out={out}"], store.data)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(f"lab export: run id '{store.run_id}' names 2 reports")
    exported = run_cmd(["lab", "export", str(store.variant_copy), f"out={out}"], store.data)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith(f"exported {store.run_id} ({store.variant_copy}) to {out} (4 runs, ")
    bundle = json.loads(out.read_text())
    assert_valid("export", bundle, str(out))
    assert [r["status"] for r in bundle["runs"]] == ["pass", "fail", "fail", "fail"]
