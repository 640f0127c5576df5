"""Exporting a run (SPEC E1–E3): placeholders, custom endpoints, the secret scan, refusals.

Fake keys are built at test time by concatenation (never a literal in the repo).
"""

from __future__ import annotations

import json
import random
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lab.export.bundle import ExportError, export_run, path_bases, placeholder_paths
from lab.report import build_report
from lab.store import ReportError
from tests.helpers.lab_process import run_cmd
from tests.helpers.reports import make_header, make_records, write_report_dir
from tests.helpers.schemas import assert_valid

ENDPOINT = "https://llm.internal.example:8443/v1"


def fake_openai_key() -> str:
    rng = random.Random(7)
    return "sk-" + "proj-" + "Ab3" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(37))


def fake_aws_key_id() -> str:
    return "AKIA" + "".join(random.Random(8).choice(string.ascii_uppercase) for _ in range(16))


def publish(data: Path, home: Path, plant: str | None = None) -> tuple[str, Path]:
    """A report dir under ``data`` whose records mention paths under home, the run dir, tmp and /usr.

    ``plant`` goes into the second run's first verifier detail (``runs[1].verifiers[0].detail``).
    """
    header = make_header(k=2, provider=ENDPOINT)
    run_dir = data / header["suiteId"] / header["configHash"][:12]
    records = make_records({"a": "PP", "b": "PF"}, provider=ENDPOINT)
    records[0]["workspace"] = str(run_dir / "work" / "a" / "s0-r0")
    records[0]["verifiers"][0]["detail"] = f"read {home}/projects/notes.txt"
    records[2]["verifiers"][0]["diagnostics"]["stderrTail"] = (
        'File "/usr/lib/python3.11/json/decoder.py", line 3\n'
        f"scratch at {Path(tempfile.gettempdir()) / 'lab-scratch-1' / 'out.log'}.")
    if plant is not None:
        records[1]["verifiers"][0]["detail"] = f"stderr tail: error: bad key {plant} rejected"
    write_report_dir(data, build_report(header, records), records)
    return header["runId"], run_dir


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def exported(tmp_path: Path, home: Path, **kwargs: Any) -> dict[str, Any]:
    run_id, _ = publish(tmp_path / "data", home)
    out = tmp_path / "bundle.json"
    result = export_run(run_id, out, data=tmp_path / "data", env={"HOME": str(home)}, home=home, **kwargs)
    assert result.out == out and result.runs == 4
    bundle: dict[str, Any] = json.loads(out.read_text())
    assert_valid("export", bundle, str(out))
    return bundle


def test_bundle_holds_report_runs_and_markdown(tmp_path: Path, home: Path) -> None:
    bundle = exported(tmp_path, home)
    assert list(bundle) == ["schemaVersion", "markdown", "report", "runs"]
    assert bundle["report"]["summary"]["passes"] == 3
    assert [r["taskId"] for r in bundle["runs"]] == ["a", "a", "b", "b"]
    assert bundle["markdown"].startswith("# toy 1.0.0")


def test_paths_become_placeholders(tmp_path: Path, home: Path) -> None:
    bundle = exported(tmp_path, home)
    runs = bundle["runs"]
    assert runs[0]["workspace"] == "<run-dir>/work/a/s0-r0"
    assert runs[0]["verifiers"][0]["detail"] == "read <home>/projects/notes.txt"
    tail = runs[2]["verifiers"][0]["diagnostics"]["stderrTail"]
    assert tail == 'File "<path>/json/decoder.py", line 3\nscratch at <tmp>/lab-scratch-1/out.log.'
    assert str(tmp_path) not in json.dumps(bundle)


def test_a_url_provider_becomes_custom_endpoint(tmp_path: Path, home: Path) -> None:
    bundle = exported(tmp_path, home)
    assert bundle["report"]["header"]["provider"] == "custom-endpoint"
    assert {r["provider"] for r in bundle["runs"]} == {"custom-endpoint"}
    assert "llm.internal.example" not in json.dumps(bundle)


@pytest.mark.parametrize(("text", "expected"), [
    ("see https://example.com/a/b and a/b and 1/2", "see https://example.com/a/b and a/b and 1/2"),
    ("</div> <tmp>/x <workspace>/calc.py", "</div> <tmp>/x <workspace>/calc.py"),
    ("file:///R/home/u/x.txt", "file://<home>/x.txt"),
    ("/R/run", "<run-dir>"),
    ("(/opt/tool/bin), then", "(<path>/tool/bin), then"),
    ("/etc/hosts", "<path>/hosts"),
    ("C:\\Users\\someuser\\proj\\a.py", "<home>\\proj\\a.py"),
    (json.dumps("C:\\Users\\someuser\\proj\\a.py"), json.dumps("<home>\\proj\\a.py")),
    ("/home/first last/work/x.py", "<home>/work/x.py"),
    ("/Users/someone/Library/x and /home/bob", "<home>/Library/x and <home>"),
    ("https://example.com/R/run", "https://example.com/R/run"),
])
def test_placeholder_rules(text: str, expected: str) -> None:
    bases = path_bases(Path("/R/run"), home=Path("/R/home/u"), tmp=Path("/R"))
    assert placeholder_paths(text, bases) == expected


def test_the_longest_base_wins(tmp_path: Path) -> None:
    bases = path_bases(tmp_path / "home" / "data" / "s" / "c", home=tmp_path / "home", tmp=tmp_path)
    assert placeholder_paths(f"{tmp_path}/home/data/s/c/x {tmp_path}/home/y {tmp_path}/z", bases) == \
        "<run-dir>/x <home>/y <tmp>/z"


def test_a_planted_key_is_refused_naming_the_field(tmp_path: Path, home: Path) -> None:
    key = fake_openai_key()
    run_id, _ = publish(tmp_path / "data", home, plant=key)
    out = tmp_path / "bundle.json"
    with pytest.raises(ExportError) as caught:
        export_run(run_id, out, data=tmp_path / "data", env={}, home=home)
    assert "runs[1].verifiers[0].detail" in str(caught.value) and key not in str(caught.value)
    assert [h.field for h in caught.value.hits] == ["runs[1].verifiers[0].detail"]
    assert not out.exists()


def test_an_environment_credential_is_refused(tmp_path: Path, home: Path) -> None:
    secret = "Zq" + "".join(random.Random(3).choice(string.ascii_letters) for _ in range(20))
    run_id, _ = publish(tmp_path / "data", home, plant=secret)
    with pytest.raises(ExportError, match=r"credential from \$ACME_API_KEY"):
        export_run(run_id, tmp_path / "b.json", data=tmp_path / "data", env={"ACME_API_KEY": secret}, home=home)


@pytest.mark.parametrize(("ref", "message"), [
    *((ref, f"{ref}: no such report file, directory or run id")
      for ref in ("../x", "a/b", ".hidden", "toy..k5", "/abs", "toy.abc.k5.s0")),
    ("", "no report given"),  # not the working directory's report
])
def test_a_reference_to_no_report_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       ref: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ReportError) as err:
        export_run(ref, tmp_path / "b.json", data=tmp_path, env={})
    assert str(err.value).startswith(message) and not (tmp_path / "b.json").exists()


def test_overwriting_needs_force(tmp_path: Path, home: Path) -> None:
    run_id, _ = publish(tmp_path / "data", home)
    out = tmp_path / "bundle.json"
    out.write_text("keep me")
    with pytest.raises(ExportError, match="force=true"):
        export_run(run_id, out, data=tmp_path / "data", env={}, home=home)
    assert out.read_text() == "keep me"
    export_run(run_id, out, data=tmp_path / "data", env={}, home=home, force=True)
    assert json.loads(out.read_text())["schemaVersion"] == 1


# --- CLI ------------------------------------------------------------------------------------

def test_cli_refuses_a_planted_key_without_showing_it(tmp_path: Path, home: Path) -> None:
    key = fake_aws_key_id()
    run_id, _ = publish(tmp_path, home, plant=key)
    out = tmp_path / "bundle.json"
    result = run_cmd(["lab", "export", run_id, f"out={out}"], tmp_path)
    assert result.returncode == 1
    assert "runs[1].verifiers[0].detail (AWS Access Key)" in result.stderr
    assert key not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


@pytest.mark.slow
def test_cli_writes_then_refuses_to_overwrite_then_forces(tmp_path: Path, home: Path) -> None:
    run_id, _ = publish(tmp_path, home)
    out = tmp_path / "bundle.json"
    first = run_cmd(["lab", "export", run_id, f"out={out}"], tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"exported {run_id}" in first.stdout
    again = run_cmd(["lab", "export", run_id, f"out={out}"], tmp_path)
    assert again.returncode == 1 and "exists; pass force=true" in again.stderr
    forced = run_cmd(["lab", "export", run_id, f"out={out}", "force=true"], tmp_path)
    assert forced.returncode == 0, forced.stderr


def test_cli_refuses_a_directory_without_a_report(tmp_path: Path) -> None:
    result = run_cmd(["lab", "export", str(tmp_path), f"out={tmp_path / 'b.json'}"], tmp_path)
    assert result.returncode == 1 and f"{tmp_path}: no report.json in this directory" in result.stderr
    assert not (tmp_path / "b.json").exists()


def test_doit_export_writes_the_target(tmp_path: Path, home: Path) -> None:
    run_id, _ = publish(tmp_path / "data", home)
    dodo = tmp_path / "dodo.py"
    dodo.write_text("from lab.build.cmdline import doit_config\nfrom lab.build.compare_export import task_compare, task_export\n"
                    "DOIT_CONFIG = doit_config()\n")
    out = tmp_path / "bundle.json"
    argv = ["doit", "-f", str(dodo), "export", f"run={run_id}", f"out={out}"]
    first = run_cmd(argv, tmp_path / "data")
    assert first.returncode == 0, first.stdout + first.stderr
    assert_valid("export", json.loads(out.read_text()), str(out))
    second = run_cmd(argv, tmp_path / "data")
    assert second.returncode == 0 and "exported" not in second.stdout


@pytest.mark.slow
def test_export_of_a_real_replay_eval(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "mode=replay", "keep=true"], data)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = next(data.glob("smoke-coding/*/reports/*")).name
    out = tmp_path / "bundle.json"
    exported_run = run_cmd(["lab", "export", run_id, f"out={out}"], data)
    assert exported_run.returncode == 0, exported_run.stderr
    bundle = json.loads(out.read_text())
    assert_valid("export", bundle, str(out))
    assert len(bundle["runs"]) == bundle["report"]["summary"]["runs"] >= 3
    assert all(r["workspace"].startswith("<run-dir>/work/") for r in bundle["runs"])
    assert str(tmp_path) not in out.read_text()
