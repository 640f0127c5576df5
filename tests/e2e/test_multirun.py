"""`lab run -m`: a Hydra multirun over the eval, with the basic and the joblib launcher."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lab.build.multirun import EXIT_FILE, combinations, sweep_code
from lab.errors import ConfigError
from tests.helpers.lab_process import ROOT, run_cmd
from tests.suites.test_suite_source import write_suite


def test_sweeps_expand_into_every_combination() -> None:
    assert combinations(["suite=core", "k=1,2", "variant=baseline,no-compaction"]) == [
        ["suite=core", "k=1", "variant=baseline"], ["suite=core", "k=1", "variant=no-compaction"],
        ["suite=core", "k=2", "variant=baseline"], ["suite=core", "k=2", "variant=no-compaction"]]
    assert combinations(["k=range(1,3)"]) == [["k=1"], ["k=2"]]


def test_unparseable_sweep_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot parse overrides"):
        combinations(["k=[1"])


@pytest.mark.slow
def test_multirun_writes_one_report_per_job(tmp_path: Path) -> None:
    # The basic launcher over a suite_dir suite with an escaped interpolation in a value: one report per job,
    # each job's output after its header, every job composed as `lab run` composes the same overrides (the
    # suite found in suite_dir, the text kept literal), so `lab run … k=2` finds the k=2 job's runs up to date.
    write_suite(tmp_path / "suites")
    prompt = r"agent.system_prompt='Answer. \${not_an_interpolation}'"
    argv = [f"suite_dir={tmp_path / 'suites'}", "suite=ext", "provider=scripted", "yes=true", prompt]
    data = tmp_path / "runs"
    result = run_cmd(["lab", "run", "-m", *argv, "k=1,2"], data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Could not find" not in result.stderr
    reports = sorted(p.parent.name for p in data.glob("ext/*/reports/*/report.json"))
    assert [r.rsplit(".", 2)[1:] for r in reports] == [["k1", "s0"], ["k2", "s0"]]
    assert not (ROOT / "multirun.yaml").exists()
    blocks = result.stdout.split("multirun: job ")[1:]
    headers = sorted(block.splitlines()[0] for block in blocks)
    assert headers == [f"{n} of 2: suite_dir={tmp_path / 'suites'} suite=external suite.id='ext' provider=scripted "
                       rf"yes=True agent.system_prompt='Answer. \${{not_an_interpolation}}' k={n}" for n in (1, 2)]
    for block in blocks:
        k = block.splitlines()[0][-1]
        assert [line for line in block.splitlines() if line.startswith(("eval ext", "report: "))] == [
            f"eval ext 0.1.0 · live · scripted/scripted · k={k} · {int(k)} run(s) · results in {data}",
            f"report: {next(data.glob(f'ext/*/reports/*.k{k}.s0/report.md'))}"]
    single = run_cmd(["lab", "run", *argv, "k=2"], data)
    assert single.returncode == 0 and "2 run(s) up to date" in single.stdout, single.stdout + single.stderr
    [config] = list(data.glob("ext/*/config.json"))
    assert json.loads(config.read_text())["config"]["agent"]["system_prompt"] == "Answer. ${not_an_interpolation}"


@pytest.mark.slow
def test_joblib_multirun_writes_one_report_per_job_each_output_in_one_piece(tmp_path: Path) -> None:
    # One task of the suite: the jobs, their reports and their output are what is checked. Two workers for the
    # two jobs (joblib's default is one per core, each a fresh interpreter that imports the lab).
    result = run_cmd(["lab", "run", "-m", "suite=core", "mode=replay", "tasks=[edit-file]", "k=1,2",
                      "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    reports = sorted(p.parent.name for p in tmp_path.glob("core/*/reports/*/report.json"))
    assert [r.rsplit(".", 3)[1:3] for r in reports] == [["k1", "s0"], ["k2", "s0"]]  # then the task selection
    assert not (ROOT / "multirun.yaml").exists()
    # Each job's output follows its header in one piece, also when joblib runs the jobs at once.
    blocks = result.stdout.split("multirun: job ")[1:]
    headers = sorted(block.splitlines()[0] for block in blocks)
    assert headers == [f"{n} of 2: suite=core mode=replay tasks=[edit-file] k={n}" for n in (1, 2)]
    for block in blocks:
        k = block.splitlines()[0][-1]
        assert [line for line in block.splitlines() if line.startswith(("eval core", "report: "))] == [
            f"eval core 1.0.0 · replay · scripted/scripted · k={k} · {int(k)} run(s) · results in {tmp_path}",
            f"report: {next(tmp_path.glob(f'core/*/reports/*.k{k}.s0.*/report.md'))}"]


@pytest.mark.slow
def test_multirun_exit_code_is_the_worst_job(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    victim = cassettes / "core" / "delete-file.jsonl"
    lines = [json.loads(line) for line in victim.read_text().splitlines()]
    lines[1]["request"]["messages"][1]["content"] += " (edited)"
    victim.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_cmd(["lab", "run", "-m", "suite=core", "mode=replay", f"cassette_dir={cassettes}",
                      "tasks=[edit-file],[delete-file]"], tmp_path / "runs")
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(list((tmp_path / "runs").glob("core/*/reports/*/report.json"))) == 2


def test_the_sweep_code_is_the_worst_job_code_and_a_missing_one_fails(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    combos = [["k=1"], ["k=2"], ["k=3"]]
    for number in (0, 1):
        (tmp_path / str(number)).mkdir()
        (tmp_path / str(number) / EXIT_FILE).write_text("0\n")
    assert sweep_code(tmp_path, combos[:2]) == 0
    assert sweep_code(tmp_path, combos) == 1  # job 2 left no code: it did not finish
    assert "job 2 (k=3) ended without an exit code" in capsys.readouterr().err
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / EXIT_FILE).write_text("2\n")
    assert sweep_code(tmp_path, combos) == 2  # the worst code
    (tmp_path / "0" / EXIT_FILE).write_text("130\n")
    assert sweep_code(tmp_path, combos) == 130  # interrupted: the sweep did not complete


SMOKE = ["suite=smoke-coding", "provider=scripted", "tasks=[fix-default-argument]"]


@pytest.mark.slow
def test_a_failed_sweep_job_does_not_pass_on_an_older_report(tmp_path: Path) -> None:
    first = run_cmd(["lab", "run", *SMOKE, "k=1"], tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    [report] = list(tmp_path.glob("smoke-coding/*/reports/*/report.json"))
    [runs] = list(tmp_path.glob("smoke-coding/*/runs/fix-default-argument"))
    shutil.rmtree(runs)
    runs.write_text("a file where the run records go: the job cannot write its record\n")
    swept = run_cmd(["lab", "run", "-m", *SMOKE, "k=1"], tmp_path)
    assert swept.returncode == 1, swept.stdout + swept.stderr  # not 0 from the earlier eval's report
    # The job's own failure is named (the path it could not write), and the older report is left as it was.
    assert "fix-default-argument" in swept.stderr and ("File exists" in swept.stderr or "Not a directory" in swept.stderr)
    assert report.exists()
