"""`lab variants … sequential=true` end to end, and `lab plan` on the report it made (SPEC K8, K9).

A suite written here has two tasks whose command verifier passes at random
at a fixed rate (0.5): a seeded generator indexed by a counter file outside
the workspace, so the sequence of verdicts is reproducible and every
verifier call is counted. Both variants are the same agent (they differ in a
temperature the scripted provider ignores), so any *improved* or *regressed*
would be a false decision.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid

pytestmark = pytest.mark.slow

TASKS = ("t1", "t2")


def write_coin_suite(root: Path, counter: Path, rate: float) -> Path:
    """A suite ``coin`` under ``root`` whose verifier passes with probability ``rate``."""
    suite = root / "coin"
    (suite / "fixtures" / "empty").mkdir(parents=True)
    (suite / "scripts").mkdir()
    (suite / "fixtures" / "empty" / "README.md").write_text("nothing to do\n", encoding="utf-8")
    coin = (f"import pathlib, random, sys; p = pathlib.Path({str(counter)!r}); "
            "n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1)); "
            f"sys.exit(0 if random.Random(n).random() < {rate} else 1)")
    tasks = []
    for task in TASKS:
        tasks.append({"id": task, "prompt": "Change nothing and answer DONE.", "fixture": "fixtures/empty",
                      "budget": {"maxTurns": 3, "maxWallMs": 60000}, "policy": {"mode": "auto", "allow": []},
                      "verifiers": [{"id": "coin", "kind": "command", "argv": ["python3", "-c", coin],
                                     "timeoutMs": 30000, "expectExit": 0}], "tags": []})
        script = {"schemaVersion": 1, "taskId": task, "turns": [{"content": "DONE: nothing to change"}]}
        (suite / "scripts" / f"{task}.json").write_text(json.dumps(script), encoding="utf-8")
    doc = {"schemaVersion": 1, "suiteId": "coin", "suiteVersion": "1.0.0", "description": "a fair coin per run",
           "tasks": tasks}
    (suite / "suite.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return root


def test_equal_variants_never_improve_or_regress_and_a_larger_k_continues(tmp_path: Path) -> None:
    counter, data, out = tmp_path / "counter", tmp_path / "runs", tmp_path / "cmp"
    suites = write_coin_suite(tmp_path / "suites", counter, 0.5)
    argv = ["lab", "variants", f"suite_dir={suites}", "suite=coin", "provider=scripted", "yes=true",
            "trust_local=true", "sandbox=none", "compare_key=agent.temperature", "compare_value=0.5",
            "sequential=true", "round=2", f"out={out}"]
    first = run_cmd([*argv, "k=4"], data)
    assert first.returncode == 0, first.stdout + first.stderr
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert_valid("comparison", doc, "comparison.json")
    seq = doc["sequential"]
    assert seq["decision"] in ("unchanged", "inconclusive")
    assert doc["aggregate"]["verdict"] == seq["decision"]
    assert seq["maxK"] == 4 and seq["round"] == 2 and seq["plannedRounds"] == 2
    assert [look["runsPerTask"] for look in seq["looks"]] == [2, 4][: seq["stoppedAtRound"]]
    made = seq["looks"][-1]["runsPerTask"]
    assert seq["runsExecuted"] == made * len(TASKS) * 2 == int(counter.read_text())
    assert seq["runsMax"] == 4 * len(TASKS) * 2 and seq["runsSaved"] == seq["runsMax"] - seq["runsExecuted"]
    if seq["decision"] == "inconclusive":
        assert seq["stoppedAtRound"] == 2 and not seq["stoppedEarly"] and seq["alphaSpent"] == pytest.approx(0.05)
    for label in ("unset", "agent.temperature_0.5"):
        report = json.loads((out / label / "report.json").read_text(encoding="utf-8"))
        assert report["header"]["k"] == made and report["summary"]["runs"] == made * len(TASKS)
    markdown = (out / "comparison.md").read_text(encoding="utf-8")
    assert "## Sequential test" in markdown and f"**{seq['decision']}** at round {seq['stoppedAtRound']} of 2" in markdown
    assert "## Sequential test" in first.stdout and "α spent:" in first.stdout
    if seq["stoppedAtRound"] == 2:
        assert "round 1 of 2: 2 runs per task and variant" in first.stdout
    assert f"runs: {seq['runsExecuted']} executed now over {seq['stoppedAtRound']} round(s), up to {made} per task " \
           "and variant\n" in first.stdout  # nothing was reused: no "up to date" clause

    # The same command with a larger k continues from the records: only the new repetitions run.
    before = int(counter.read_text())
    second = run_cmd([*argv, "k=6"], data)
    assert second.returncode == 0, second.stdout + second.stderr
    again = json.loads((out / "comparison.json").read_text(encoding="utf-8"))["sequential"]
    assert again["decision"] in ("unchanged", "inconclusive") and again["maxK"] == 6
    executed = int(counter.read_text()) - before
    assert executed == again["runsExecuted"] - before
    assert f"runs: {executed} executed now" in second.stdout
    assert f"; {before} up to date from an identical earlier sequential variants command" in second.stdout

    # lab plan on the baseline variant's report this eval made
    planned = run_cmd(["lab", "plan", str(out / "unset"), "delta=0.2", "jobs=2"], data)
    assert planned.returncode == 0, planned.stderr
    assert "suite (task-weighted mean success rate): k = " in planned.stdout
    assert "expected wall time:" in planned.stdout and "at jobs=2" in planned.stdout
    assert "expected tokens:" in planned.stdout and "cost is not estimated" in planned.stdout


def test_sequential_needs_k_and_lab_variants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: refusals of `lab variants`' own arguments, before any build (the real `doit` process
    # is run below; test_variants.py runs `lab variants` refusals as real processes).
    from lab.cli import main

    def refused(*words: str) -> str:
        assert main(["variants", "suite=core", "variant=baseline,no-compaction", *words]) == 1
        return capsys.readouterr().err

    assert refused("sequential=true").strip() == (
        "lab variants: sequential=true needs k=K, the most repetitions per task")
    assert "sequential must be true or false, got 'maybe'" in refused("k=5", "sequential=maybe")
    assert "round= and tolerance= apply to sequential=true only" in refused("k=5", "round=2")
    three = main(["variants", "suite=core", "variant=baseline,no-compaction,small-context", "k=5",
                  "sequential=true", "provider=scripted"])
    err = capsys.readouterr().err
    assert three == 1 and err.strip().endswith("variants: sequential=true compares exactly two variants, got 3"), err
    under_doit = run_cmd(["doit", "variants", "suite=core", "variant=baseline,no-compaction", "k=5",
                          "sequential=true"], tmp_path / "runs")
    assert under_doit.returncode == 1 and "runs its rounds under `lab variants`" in under_doit.stderr
