"""agent=reference runs the bundled smoke-coding suite through the gateway: record, then replay (CI, no network).

The scripted provider sits behind the gateway (``provider=scripted``) and plays
the reference agent's own scripts (suites/smoke-coding/scripts/agents/reference/),
as chat completions or translated to Responses API events, streamed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_jsonl_valid, assert_valid

pytestmark = pytest.mark.slow


def verdicts(data_dir: Path) -> dict[str, list[str]]:
    """Per task: the run's status, claim and every verifier's status, from the run records."""
    report = json.loads(next(data_dir.glob("smoke-coding/*/reports/*/report.json")).read_text())
    assert_valid("report", report)
    agent = report["header"]["agent"]
    assert {k: agent[k] for k in ("name", "kind", "version")} == {"name": "reference", "kind": "command",
                                                                  "version": "0.1.0"}
    assert len(agent["digest"]) == 64 and agent["executable"]  # the program measured
    found = {}
    for path in data_dir.glob("smoke-coding/*/runs/*/*.json"):
        record = json.loads(path.read_text())
        assert_valid("run-record", record)
        found[record["taskId"]] = [record["status"], record["claim"], *[v["status"] for v in record["verifiers"]]]
    return found


def cassettes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "smoke-coding" / "agents" / "reference").glob("*.jsonl"))}


# The whole suite recorded over chat completions; over the Responses API (same lab code past the wire, so
# the second API costs the test run a fraction of the agent starts) the two tasks whose wire shapes and
# verifiers hold those of fix-default-argument, add-function-docstring and add-input-validation (a read,
# a write, an answer): rename-symbol's turns carry five parallel tool calls, edit-respecting-hash reads
# its file again after its own write and adds tool-sequence verifiers. The first replay takes both, the
# second replay and the re-recording one of them: the same code per task.
SUBSET = ["rename-symbol", "edit-respecting-hash"]
ONE = SUBSET[1:]


@pytest.mark.parametrize(("api", "tasks"), [("chat", None), ("responses", SUBSET)])
def test_record_then_replay_twice_is_identical(tmp_path: Path, api: str, tasks: list[str] | None) -> None:
    n = 7 if tasks is None else len(tasks)
    base = ["suite=smoke-coding", "provider=scripted", "agent=reference", f"agent.api={api}", "jobs=2",
            *([f"tasks=[{','.join(tasks)}]"] if tasks else []), f"cassette_dir={tmp_path / 'cassettes'}"]
    recorded = run_cmd(["doit", "record", *base], tmp_path / "record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert recorded.stdout.rstrip().endswith(  # the hint a user follows to replay them
        f"replay them with mode=replay agent=reference cassette_dir={tmp_path / 'cassettes'})"), recorded.stdout
    first = cassettes(tmp_path / "cassettes")
    assert len(first) == n
    for name in first:
        assert_jsonl_valid("cassette", tmp_path / "cassettes" / "smoke-coding" / "agents" / "reference" / name)
    calls = [json.loads(line) for line in next(iter(first.values())).decode().splitlines()[1:]]
    assert {c["api"] for c in calls} == {api} and all(c["exchange"]["type"] == "sse" for c in calls)
    expected = verdicts(tmp_path / "record")
    assert all(v[0] == "pass" for v in expected.values()), expected
    for i in range(2 if tasks is None else 1):  # replayed twice over chat completions, once over Responses
        only = SUBSET if i == 0 else ONE
        replayed = run_cmd(["doit", "eval", "mode=replay", "k=1", *base, f"tasks=[{','.join(only)}]"],
                           tmp_path / f"replay{i}")
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert verdicts(tmp_path / f"replay{i}") == {t: v for t, v in expected.items() if t in only}
        # The banner and the closing header name the command agent.
        assert replayed.stdout.count("· agent reference 0.1.0 ·") == 2, replayed.stdout
    other = "responses" if api == "chat" else "chat"
    mismatch = run_cmd(["doit", "eval", "mode=replay", "k=1", *base, f"agent.api={other}"], tmp_path / "other")
    # Said once, before any run, naming both APIs and the fix.
    assert mismatch.returncode == 1, mismatch.stdout + mismatch.stderr
    assert mismatch.stderr.count(f"were recorded with agent.api={api}") == 1, mismatch.stderr
    assert f"{n} of {n} cassettes of agent reference" in mismatch.stderr
    assert f"this run uses agent.api={other} (record again, or pass agent.api={api})" in mismatch.stderr
    assert "Traceback" not in mismatch.stderr and not list((tmp_path / "other").glob("*/*/runs/*/*.json"))
    shutil.copytree(tmp_path / "cassettes", tmp_path / "again")
    again = run_cmd(["doit", "record", *[a for a in base[:-1] if not a.startswith("tasks=")], f"tasks=[{ONE[0]}]",
                     f"cassette_dir={tmp_path / 'again'}"], tmp_path / "record2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted({p.parent.name for p in (tmp_path / "record2").glob("smoke-coding/*/runs/*/*.json")}) == ONE
    assert cassettes(tmp_path / "again") == first  # the recomputed cassettes are byte-identical, the others kept
