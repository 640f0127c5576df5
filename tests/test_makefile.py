"""The Makefile's housekeeping targets, run by the real `make` on a copy of the checkout's layout.

`make clean` removes what the build made and nothing else; `make clean-results` deletes the
results, naming each entry, and keeps the installed command agents. The test suite's command
prints the ten slowest tests.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, command_env

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _checkout(tmp_path: Path) -> Path:
    """A directory with the Makefile, a built virtualenv, bytecode, results and an installed agent."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for made in (".venv/bin", "reliability_lab.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                 ".import_linter_cache", "lab/__pycache__",
                 "runs/smoke-coding/v1.0.0.abc.scripted/reports/r1", "runs/.cache", "runs/agents/aider/bin"):
        (tmp_path / made).mkdir(parents=True)
    (tmp_path / "lab" / "x.py").write_text("")
    (tmp_path / "runs" / ".doit.sqlite").write_text("")
    (tmp_path / "runs" / "agents" / "aider" / "installed-version").write_text("0.86.1\n")
    return tmp_path


def _make(target: str, where: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in command_env().items() if not k.startswith("MAKE")} | env
    return subprocess.run(["make", "--no-print-directory", "-C", str(where), target], env=environ,
                          capture_output=True, text=True, check=False, timeout=60)


def test_clean_removes_the_build_and_keeps_results_and_agents(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    result = _make("clean", root)
    assert result.returncode == 0, result.stderr
    for gone in (".venv", "reliability_lab.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                 ".import_linter_cache", "lab/__pycache__"):
        assert not (root / gone).exists(), gone
    assert (root / "lab" / "x.py").is_file()
    assert (root / "runs" / "smoke-coding" / "v1.0.0.abc.scripted" / "reports" / "r1").is_dir()
    assert (root / "runs" / "agents" / "aider" / "installed-version").is_file()


def test_clean_results_names_what_it_deletes_and_keeps_agents(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    result = _make("clean-results", root)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["agents"]
    assert (root / "runs" / "agents" / "aider" / "installed-version").is_file()
    assert (root / ".venv" / "bin").is_dir()
    said = result.stdout.splitlines()
    assert sorted(said[:-1]) == ["make: deleting runs/.cache", "make: deleting runs/.doit.sqlite",
                                 "make: deleting runs/smoke-coding"]
    assert said[-1] == "make: kept runs/agents (installed command agents)"
    again = _make("clean-results", root)
    assert again.stdout.splitlines() == ["make: kept runs/agents (installed command agents)"]


def test_clean_results_follows_lab_data_dir(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "checkout")
    elsewhere = tmp_path / "store"
    (elsewhere / "core").mkdir(parents=True)
    result = _make("clean-results", root, LAB_DATA_DIR=str(elsewhere))
    assert result.stdout.splitlines() == [f"make: deleting {elsewhere}/core"]
    assert not (elsewhere / "core").exists()
    assert (root / "runs" / "smoke-coding").is_dir()


def test_clean_results_deletes_every_entry_but_keeps_an_agents_dir_inside_the_store(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    runs = root / "runs"
    (runs / "..odd").mkdir()
    (runs / ".x").write_text("")
    (runs / "dangling").symlink_to(tmp_path / "nowhere")
    (runs / "shared" / "agents" / "codex").mkdir(parents=True)
    result = _make("clean-results", root, LAB_AGENTS_DIR=str(runs / "shared" / "agents"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in runs.iterdir()) == ["agents", "shared"]
    assert (runs / "shared" / "agents" / "codex").is_dir()
    said = result.stdout.splitlines()
    assert f"make: kept runs/shared (holds LAB_AGENTS_DIR={runs}/shared/agents)" in said
    assert {"make: deleting runs/..odd", "make: deleting runs/.x", "make: deleting runs/dangling"} <= set(said)


def test_ci_prints_the_ten_slowest_tests() -> None:
    result = subprocess.run(["make", "-n", "-C", str(ROOT), "test"], capture_output=True, text=True, check=False,
                            timeout=60, env={"PATH": "/usr/bin:/bin"})
    pytest_line = next(line for line in result.stdout.splitlines() if "-m pytest" in line)
    assert "--durations=10" in pytest_line.split()


def test_agents_install_without_agent_says_how_to_name_one(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    result = subprocess.run(["make", "--no-print-directory", "-C", str(root), "-o", ".venv/.installed", "agents-install"],
                            capture_output=True, text=True, check=False, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == ("make: agents-install needs AGENT=NAME (make agents-install AGENT=aider; "
                                             "`.venv/bin/lab agents list` names them)")


def test_clean_results_keeps_agents_when_lab_agents_dir_is_the_store_and_never_empties_home(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "checkout")
    runs = root / "runs"
    (runs / "codex" / "bin").mkdir(parents=True)  # LAB_AGENTS_DIR=the store: agents sit beside the results
    result = _make("clean-results", root, LAB_AGENTS_DIR=str(runs))
    assert result.returncode == 0, result.stderr
    assert "make: kept runs/codex (inside LAB_AGENTS_DIR=" + str(runs) + ")" in result.stdout.splitlines()
    assert (runs / "codex" / "bin").is_dir()
    home = tmp_path / "home"
    (home / "precious").mkdir(parents=True)
    refused = _make("clean-results", root, LAB_DATA_DIR=str(home), HOME=str(home))
    assert refused.returncode == 2 and (home / "precious").is_dir()
    assert "is / or your home directory, not a run store: nothing deleted" in refused.stderr
