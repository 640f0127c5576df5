"""Grants (SPEC C3) and bad overrides (C1) stop a command before the first run, naming the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.errors import ConfigError
from lab.execute.plan import check_grants, select_tasks
from lab.suites.source import resolve_suite
from tests.helpers.composed import composed
from tests.helpers.lab_process import run_cmd


def grant_problems(*overrides: str) -> list[str]:
    config = composed("suite=smoke-coding", *overrides)
    suite = resolve_suite(config)
    try:
        check_grants(select_tasks(suite, list(config.data["tasks"])), config, suite.id)
    except ConfigError as exc:
        return str(exc).splitlines()
    return []


def test_default_grants_admit_the_bundled_suite() -> None:
    assert grant_problems() == []


def test_every_task_needing_process_is_named_at_once() -> None:
    problems = grant_problems("allow=[write]")
    needs_process = ["rename-symbol", "off-by-one-hidden", "implement-tiny-parser"]
    assert problems == [
        f"suite smoke-coding: task {task}: policy.allow: needs effect process, which is not granted "
        f"(grant it with allow=[process,write], or leave the task out with tasks=[…])" for task in needs_process]


def test_selecting_only_tasks_within_the_grants_is_fine() -> None:
    assert grant_problems("allow=[write]", "tasks=[add-function-docstring]") == []


def test_read_only_rejects_writing_tasks() -> None:
    problems = grant_problems("read_only=true", "tasks=[add-function-docstring]")
    assert problems == ["suite smoke-coding: task add-function-docstring: policy.allow: needs effect write, "
                        "but read_only=true denies every write"]


def test_unknown_task_is_named() -> None:
    [problem] = grant_problems("tasks=[nope]")
    assert problem.startswith("config: tasks: suite smoke-coding has no task 'nope' (tasks: ")


@pytest.mark.slow
def test_a_suite_needing_process_without_the_grant_exits_1_before_any_run(tmp_path: Path) -> None:
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "allow=[write]"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "task rename-symbol: policy.allow: needs effect process, which is not granted" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert list(tmp_path.glob("**/runs/*/*.json")) == []


@pytest.mark.slow
@pytest.mark.parametrize("front", [["doit", "eval"], ["lab", "run"]])
def test_every_bad_override_is_one_line_each(tmp_path: Path, front: list[str]) -> None:
    result = run_cmd([*front, "kk=1", "k=0", "jobs=abc", "rates.input=2"], tmp_path)
    assert result.returncode == 1
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert lines == [
        "config: unknown key 'kk' (see conf/config.yaml for valid keys)",
        "config: bad value in override 'jobs=abc': Value 'abc' of type 'str' could not be converted to Integer",
        "config: k: 0 is less than the minimum of 1",
        "config: rates: give both rates.input and rates.output, or neither",
    ]
