"""``doit clean eval …`` during a running eval deleted its finished records, and the eval still
published a report counting them as never attempted. The clean is now refused while an eval of the
configuration runs, and an eval whose records vanish another way publishes no report over them."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lab.build.claims import eval_lock, refuse_clean_while_running
from lab.build.records import RecordIndex
from lab.errors import LabError
from tests.helpers.lab_process import BIN, ROOT, run_cmd


def test_the_record_index_names_records_it_saw_that_are_gone(tmp_path: Path) -> None:
    store = tmp_path / "store"
    found, written, never = (store / "runs" / "t" / f"s0-r{i}.json" for i in range(3))
    found.parent.mkdir(parents=True)
    found.write_text("{}")
    index = RecordIndex(store, file=tmp_path / "index.json")
    assert index.facts(found) is not None and index.facts(never) is None
    written.write_text("{}")
    index.written(written)
    assert index.vanished([found, written, never]) == []
    found.unlink()
    written.unlink()
    assert index.vanished([found, written, never]) == [found, written], "a run never recorded is not 'vanished'"


HOLD_EVAL = """
import sys
from pathlib import Path
from lab.build.claims import hold_eval
hold_eval(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_clean_is_refused_while_an_eval_process_holds_its_configuration(tmp_path: Path) -> None:
    lock = eval_lock(tmp_path / "store", "suite.v1.abc.scripted.k2.s0")
    assert lock == tmp_path / "store" / ".locks" / "evals" / "suite.v1.abc.scripted.k2.s0.lock"
    refuse_clean_while_running(tmp_path / "store", "suite.v1.abc.scripted.k2.s0")  # never ran: no lock file
    assert not lock.exists()
    proc = subprocess.Popen([sys.executable, "-c", HOLD_EVAL, str(lock)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        with pytest.raises(LabError, match=r"^doit clean: an eval of this configuration \(run id "
                                             r"suite\.v1\.abc\.scripted\.k2\.s0\) is running"):
            refuse_clean_while_running(tmp_path / "store", "suite.v1.abc.scripted.k2.s0")
    finally:
        proc.communicate(input="\n", timeout=30)
    code = "import sys; from pathlib import Path; from lab.build.claims import hold_for_clean; " \
           "print(hold_for_clean(Path(sys.argv[1])))"
    after = subprocess.run([sys.executable, "-c", code, str(lock)], capture_output=True, text=True,
                           timeout=60, check=True)
    assert after.stdout == "True\n", "the eval's process is gone: its claim went with it"


def _suite(root: Path, clean: str) -> Path:
    """One task whose verifier runs the shell command ``clean`` (the second run's removes the
    first run's record)."""
    suite = root / "suite"
    (suite / "fixtures" / "t").mkdir(parents=True)
    (suite / "fixtures" / "t" / "README").write_text("task copy\n")
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t.json").write_text(json.dumps({
        "schemaVersion": 1, "taskId": "t", "description": "answers at once",
        "turns": [{"content": "DONE"}]}))
    (suite / "suite.json").write_text(json.dumps({
        "schemaVersion": 1, "suiteId": "clean-mid-eval", "suiteVersion": "1.0.0",
        "description": "A verifier that cleans the eval it belongs to.",
        "tasks": [{"id": "t", "prompt": "Answer.", "fixture": "fixtures/t",
                   "budget": {"maxTurns": 2, "maxWallMs": 120000, "maxToolCalls": 1},
                   "policy": {"mode": "auto", "allow": ["process"], "readOnly": False},
                   "verifiers": [{"id": "clean", "kind": "command", "timeoutMs": 120000,
                                  "argv": ["sh", "-c", clean]}]}]}))
    return suite


@pytest.mark.slow
def test_doit_clean_refuses_during_an_eval_and_records_removed_otherwise_stop_the_report(tmp_path: Path) -> None:
    """Each run's verifier runs ``doit clean eval …`` on the running eval (refused), then removes
    the records another way (``rm``): the eval publishes no report over the missing run."""
    data = tmp_path / "data"
    overrides = ["provider=scripted", "sandbox=none", "trust_local=true", "k=2", "yes=true"]
    suite_path = tmp_path / "suite"
    argv = ["suite=external", f"suite.path={suite_path}", *overrides]
    clean = ["env", f"LAB_DATA_DIR={data}", str(BIN / "doit"), "clean", "eval", *argv]
    log = tmp_path / "clean.log"
    records = f"{shlex.quote(str(data))}/*/*/runs/t/*.json"
    _suite(tmp_path, f"cd {shlex.quote(str(ROOT))} && {{ {shlex.join(clean)}; echo exit=$?; }} >> {log} 2>&1; "
                     f"rm -f {records}")
    result = run_cmd(["doit", "eval", *argv], data)
    refusal = ("doit clean: an eval of this configuration (run id clean-mid-eval.")
    assert log.read_text().count(refusal) == 2 and log.read_text().count("exit=1") == 2, log.read_text()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "were removed while it ran" in result.stderr and "no report published" in result.stderr
    assert list(data.glob("*/*/reports/*/report.json")) == []
    after = run_cmd(["doit", "clean", "eval", *argv], data)  # no eval running now: the clean goes ahead
    assert after.returncode == 0, after.stdout + after.stderr
