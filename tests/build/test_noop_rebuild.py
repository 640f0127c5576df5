"""A no-op `doit eval` served from what earlier commands remembered, and every change that must
still make the next command compose, load or run again (issue 16; lab.stamps and its users).

Each test replays two tasks of a copy of smoke-coding (``suite_dir=``, ``cassette_dir=``)
in its own data dir: a first eval runs the 2 runs, every file is then aged
(so it counts as settled) and a second eval finds them up to date and
remembers what it composed, loaded and read. What follows is the third.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.paths import CASSETTES_DIR, SUITES_DIR
from lab.stamps import stamp
from tests.helpers.lab_process import BIN, ROOT, command_env

pytestmark = pytest.mark.slow

OLD_S = 1_000_000_000
EXECUTED = re.compile(r"^  (pass|fail|budget_exceeded|error)\s", re.MULTILINE)
HEAVY = ("hydra", "omegaconf", "jsonschema", "yaml", "detect_secrets", "jinja2", "tabulate")
TASKS = "tasks=[rename-symbol,fix-default-argument]"
"""Two tasks: one whose fixture and cassette the tests edit, one they leave alone (what is kept)."""
N = 2


@dataclass
class Lab:
    """A copy of smoke-coding and its cassettes, a data dir, and a logging stand-in for bwrap on PATH."""

    root: Path
    env: dict[str, str]

    @property
    def suite(self) -> Path:
        return self.root / "suites" / "smoke-coding"

    @property
    def cassettes(self) -> Path:
        return self.root / "cassettes" / "smoke-coding"

    @property
    def data(self) -> Path:
        return self.root / "runs"

    def eval(self, *extra: str, importtime: bool = False, env: dict[str, str] | None = None) -> Run:
        argv = [str(BIN / "doit"), "eval", f"suite_dir={self.root / 'suites'}", "suite=smoke-coding", "mode=replay",
                f"cassette_dir={self.root / 'cassettes'}", "yes=true", "trust_local=true", TASKS, *extra]
        if importtime:
            argv = [sys.executable, "-X", "importtime", *argv]
        result = subprocess.run(argv, cwd=ROOT, env={**self.env, **(env or {})}, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, timeout=600, check=False)
        assert result.returncode in (0, 2), result.stdout + result.stderr
        return Run(result.stdout, result.stderr)

    def age(self) -> None:
        for path in [self.root, *self.root.rglob("*")]:
            os.utime(path, (OLD_S, OLD_S), follow_symlinks=False)


@dataclass
class Run:
    stdout: str
    stderr: str

    @property
    def executed(self) -> int:
        return len(EXECUTED.findall(self.stdout))

    @property
    def up_to_date(self) -> int:
        found = re.search(r"^(\d+) run\(s\) up to date", self.stdout, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def imported(self, module: str) -> bool:
        return any(line.rstrip().endswith(f"| {module}") for line in self.stderr.splitlines())


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    shutil.copytree(SUITES_DIR / "smoke-coding", tmp_path / "suites" / "smoke-coding", symlinks=True)
    shutil.copytree(CASSETTES_DIR / "smoke-coding", tmp_path / "cassettes" / "smoke-coding")
    env = {k: v for k, v in command_env().items() if k != "OPENAI_BASE_URL"}
    env["LAB_DATA_DIR"] = str(tmp_path / "runs")
    real = shutil.which("bwrap")
    if real is not None:  # a stand-in that logs every start of bubblewrap, then starts it
        shim = Path(os.environ.get("TMPDIR", "/tmp")) / f"lab-shim-{os.getpid()}-{tmp_path.name}"
        shim.mkdir(mode=0o755, exist_ok=True)
        (shim / "bwrap").write_text(f'#!/bin/sh\necho "$1" >> {tmp_path}/bwrap.log\nexec {real} "$@"\n')
        (shim / "bwrap").chmod(0o755)
        env["PATH"] = f"{shim}:{env.get('PATH', os.defpath)}"
    made = Lab(tmp_path, env)
    first = made.eval()
    assert first.executed == N, first.stdout + first.stderr
    made.age()
    second = made.eval()
    assert (second.executed, second.up_to_date) == (0, N), second.stdout + second.stderr
    made.age()
    return made


def bwrap_starts(lab: Lab) -> int:
    log = lab.root / "bwrap.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_noop_eval_composes_loads_and_starts_nothing(lab: Lab) -> None:
    before = lab.eval()
    db, starts = stamp(lab.data / ".doit.sqlite"), bwrap_starts(lab)
    third = lab.eval(importtime=True)
    assert (third.executed, third.up_to_date) == (0, N)
    assert third.stdout == before.stdout
    assert [m for m in HEAVY if third.imported(m)] == []
    assert bwrap_starts(lab) == starts, "no probe sandbox on a no-op"
    assert stamp(lab.data / ".doit.sqlite") == db, "nothing written to doit's database"


def rewrite_cassette(lab: Lab) -> None:
    """Same recording, other bytes (spacing): the run replays alike, its cassette digest differs."""
    file = lab.cassettes / "rename-symbol.jsonl"
    lines = [json.dumps(json.loads(line), separators=(", ", ": ")) for line in file.read_text().splitlines()]
    file.write_text("\n".join(lines) + "\n")


def edit_suite_json(lab: Lab) -> None:
    doc = json.loads((lab.suite / "suite.json").read_text())
    doc["description"] += " (edited)"
    (lab.suite / "suite.json").write_text(json.dumps(doc, indent=2))


def edit_fixture_file(lab: Lab) -> None:
    file = next(p for p in sorted((lab.suite / "fixtures" / "rename-symbol").rglob("*")) if p.is_file())
    file.write_bytes(file.read_bytes() + b"\n")


def add_suite_file(lab: Lab) -> None:
    (lab.suite / "scripts" / "NOTES.md").write_text("notes\n")


@pytest.mark.parametrize("change, executed, up_to_date", [
    (rewrite_cassette, 1, N - 1), (edit_suite_json, N, 0), (edit_fixture_file, N, 0), (add_suite_file, N, 0)])
def test_a_changed_input_runs_again_what_it_keys(lab: Lab, change: Callable[[Lab], None], executed: int,
                                                 up_to_date: int) -> None:
    change(lab)
    # a changed suite file without a suiteVersion bump is refused unless overwrite=true (lab.build.baseline)
    after = lab.eval("overwrite=true")
    assert (after.executed, after.up_to_date) == (executed, up_to_date), after.stdout + after.stderr


def test_another_override_plans_other_runs(lab: Lab) -> None:
    more = lab.eval("k=2")
    assert (more.executed, more.up_to_date) == (N, N)


def test_an_environment_variable_the_configuration_reads_is_read_again(lab: Lab) -> None:
    def saved_base_url() -> str:
        (config,) = lab.data.glob("smoke-coding/*/config.json")
        return str(json.loads(config.read_text())["config"]["provider"]["base_url"])

    reads_env = "provider.base_url=${oc.env:OPENAI_BASE_URL,http://127.0.0.1:8/v1}"  # not part of a run's identity
    for url in ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"):
        run = lab.eval(reads_env, env={"OPENAI_BASE_URL": url})
        assert run.up_to_date == N and saved_base_url() == url
