"""The host-side escape corpus (tests/sandbox/host_corpus) run end to end by `lab run`.

The sandbox keeps an agent's commands off the host; this corpus attacks the
lab's own code around it, which reads, matches and removes the task copy on
the host. A command agent (``hostile_agent.py``, standard library only, run
behind the gateway with ``provider=scripted``) leaves, one task each, a tree
nested 5,000 deep, links that turn the preset's ``ignore`` patterns toward a
host directory, and a 900 MiB sparse file. Every run must be judged (pass or
fail with a reason, never an infrastructure error or a lost record), the host
directory must survive, nothing may stay in ``$TMPDIR/lab-runs-<uid>/``, and
the next command on the same ``TMPDIR`` must run normally.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.registry import probe
from tests.helpers.hostile_tree import fast_dir
from tests.helpers.lab_process import command_env, run_script
from tests.helpers.schemas import assert_valid

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).parent / "host_corpus"
TASKS = ("deep-tree", "huge-file", "ignore-link")


def _backend() -> list[str]:
    """bwrap when it starts a sandbox here; else the host (``none``): the attempts are host-side either way."""
    if shutil.which("bwrap") is not None:
        try:
            if probe(BwrapBackend()) is None:
                return ["sandbox=bwrap"]
        except Exception:  # noqa: BLE001 - any reason bwrap cannot run here: use the host
            pass
    return ["sandbox=none", "trust_local=true"]


def _lab_run(suite: Path, data: Path, tmpdir: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = command_env()
    env.update(LAB_DATA_DIR=str(data), TMPDIR=str(tmpdir))
    argv = ["run", "suite=external", f"suite.path={suite}", "provider=scripted", "agent=reference",
            "agent.name=hostile", 'agent.command.argv=["{python}","hostile_agent.py","{prompt_file}","{model}"]',
            "agent.command.ignore=[hostile_agent.py,targets.json,.hostile/history.md,'logs/*']",
            "k=1", "yes=true", *_backend(), *more]
    return run_script(["lab", *argv], env=env, timeout_s=600)


def test_the_host_side_corpus_is_judged_and_leaves_the_host_alone(tmp_path: Path) -> None:
    suite = tmp_path / "host-corpus"
    shutil.copytree(CORPUS, suite)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "history.md").write_text("the user's history\n")
    (victim / "today.log").write_text("the user's log\n")
    (suite / "fixtures" / "hostile" / "targets.json").write_text(json.dumps({"victim": str(victim)}))
    with fast_dir(tmp_path / "tmp") as tmpdir:
        tmpdir.chmod(0o755)  # the sandbox's host user must reach the task copies below it
        first = _lab_run(suite, tmp_path / "data", tmpdir)
        leftovers = sorted(p.name for p in (tmpdir / f"lab-runs-{os.geteuid()}").iterdir())
        second = _lab_run(suite, tmp_path / "data", tmpdir, "tasks=[ignore-link]", "force=true")
    out = first.stdout + first.stderr
    assert first.returncode == 0, out  # failed runs are results: the eval completed
    assert "Traceback" not in out and "runs: 3 of 3" in out, out
    records = {}
    for path in (tmp_path / "data").glob("host-side-escapes/*/runs/*/*.json"):
        record = json.loads(path.read_text())
        assert_valid("run-record", record, str(path))
        records[record["taskId"]] = record
    assert sorted(records) == list(TASKS)
    for task, record in records.items():
        assert record["executor"]["exitCode"] == 0, (task, record["executor"])  # the attempt was made
        assert record["error"] is None and record["status"] in ("pass", "fail"), (task, record["error"])
    verdicts = {task: {v["id"]: (v["status"], v["detail"]) for v in r["verifiers"]} for task, r in records.items()}
    assert verdicts["deep-tree"]["main-kept"][0] == "pass"
    assert verdicts["deep-tree"]["scope"][0] == "fail" and "deeper than 512 levels" in verdicts["deep-tree"]["scope"][1]
    assert verdicts["huge-file"]["out-has-x"] == (
        "fail", f"out.bin is {900 << 20} bytes, more than the 64 MiB the lab reads of one file")
    assert records["ignore-link"]["status"] == "pass"
    assert records["ignore-link"]["warnings"] == []  # nothing failed to be set aside
    assert (victim / "history.md").read_text() == "the user's history\n"
    assert (victim / "today.log").read_text() == "the user's log\n"
    assert leftovers == [], leftovers  # no task copy, no agent-* directory, nothing to reap
    assert second.returncode == 0 and "reaped" not in second.stdout + second.stderr, second.stdout + second.stderr
    assert "Traceback" not in second.stdout + second.stderr
