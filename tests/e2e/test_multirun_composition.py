"""`lab run -m` composes every job exactly as `lab run` composes the same overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lab.build.multirun import combinations, hydra_overrides, job_overrides
from lab.config.compose import compose_config
from lab.errors import ConfigError
from tests.suites.test_suite_source import write_suite


def single_and_jobs(overrides: list[str]) -> tuple[dict[str, object], list[dict[str, object]]]:
    single = compose_config(overrides).data
    jobs = [compose_config(as_job_reads_them(job)).data for job in combinations(hydra_overrides(overrides))]
    return single, jobs


def as_job_reads_them(combo: list[str]) -> list[str]:
    """A job's overrides as it reads them back from Hydra's config (``hydra.overrides.task``)."""
    return job_overrides(OmegaConf.create({"task": combo}).task)


FORMS = [
    ["suite=core", "k=3"],
    ["suite=core", "provider=scripted", "provider.model=m1"],
    ["suite=core", r"out=/tmp/x\${PWD}"],
    ["suite=core", "out='/tmp/a b'"],
    ["suite=core", "tasks=[edit-file,delete-file]"],
    ["suite=core", "+provider.headers.X-Title=lab"],
    ["suite=core", "variant=no-compaction"],
    ["suite=core", r"agent.system_prompt='keep \${this} literal'"],
    ["suite=core", r'agent.system_prompt="keep \${this} literal"'],
    ["suite=core", r"+provider.headers.X-Title='\${oc.env:HOME}'"],
]


@pytest.mark.parametrize("overrides", FORMS, ids=[" ".join(f) for f in FORMS])
def test_each_override_form_composes_the_same_both_ways(overrides: list[str]) -> None:
    single, jobs = single_and_jobs(overrides)
    assert jobs == [single]


def test_suite_dir_is_expanded_under_multirun(tmp_path: Path) -> None:
    write_suite(tmp_path / "suites")
    single, jobs = single_and_jobs([f"suite_dir={tmp_path / 'suites'}", "suite=ext", "yes=true"])
    assert jobs == [single] and single["suite"]["id"] == "ext"  # type: ignore[index]


def test_a_suite_sweep_under_suite_dir(tmp_path: Path) -> None:
    write_suite(tmp_path / "suites", "ext")
    write_suite(tmp_path / "suites", "ext2")
    overrides = [f"suite_dir={tmp_path / 'suites'}", "suite=ext,ext2", "yes=true"]
    jobs = [compose_config(job).data["suite"]["id"] for job in combinations(hydra_overrides(overrides))]
    assert jobs == ["ext", "ext2"]
    with pytest.raises(ConfigError, match="sweep only suites found in suite_dir"):
        hydra_overrides([f"suite_dir={tmp_path / 'suites'}", "suite=ext,core"])


# `lab run -m` with suite_dir through the real process (Hydra's own composition of each job, then the
# single `lab run` finding the job's runs up to date): tests/e2e/test_multirun.py::test_multirun_writes_one_report_per_job.
