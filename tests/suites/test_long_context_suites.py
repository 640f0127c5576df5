"""The long-context and long-context-stress suites, their chain-walk generator and `lab gen-stress`.

- every task's shipped fixture fails its verifiers and passes after its scripted solution;
- the facts really are out of sight: past the first page read_file shows, or cut out of a
  command's output by the harness's truncation, while the narrowed command shows them;
- chain-walk instances are deterministic, the bundled 01-05 and the baseline are the generator's
  bytes, every instance states the walk-report rules word for word, and each rule (and the walk)
  is judged by its own verifier alone;
- `lab gen-stress` in a real subprocess. Both suites pass live with the scripted provider in
  tests/suites/test_expected_outcome.py (the reference run of every bundled suite; of the five
  chain-walk-rules instances, which are checked one by one here, it runs the first).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lab.agents.builtin.tool import ToolContext, run_tool
from lab.agents.builtin.tools import TOOLS
from lab.cli.gen_stress import gen_stress
from lab.sandbox.bwrap import SANDBOX_PATH
from lab.sandbox.process import minimal_env
from lab.suites.load import load_suite
from lab.suites.stress import (
    GENERATED_SUITE_ID,
    dump_json,
    expected_output,
    generate_baseline,
    generate_instance,
)
from tests.helpers.lab_process import ROOT, run_cmd
from tests.helpers.script_interpreter import apply_script, copy_fixture, snapshot, verdicts

SUITES = ROOT / "suites"
TASK_COUNTS = {"long-context": 3, "long-context-stress": 10}
VERSIONS = {"long-context": "1.0.0", "long-context-stress": "2.0.0"}
OUTPUT_CHARS = 16_000  # the default limits.tool_output_chars


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


TASKS = [(suite_id, task) for suite_id in TASK_COUNTS
         for task in load_json(SUITES / suite_id / "suite.json")["tasks"]]
TASK_IDS = [f"{suite_id}/{task['id']}" for suite_id, task in TASKS]
BUNDLED = SUITES / "long-context-stress"


def script_of(suite_id: str, task: dict[str, Any]) -> dict[str, Any]:
    return load_json(SUITES / suite_id / "scripts" / f"{task['id']}.json")


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@cache
def shown_output(fixture: Path, argv: tuple[str, ...]) -> str:
    """What run_command shows of ``argv`` run in the (read-only) bundled ``fixture``, run once per module."""
    return tool_text(fixture, "run_command", {"argv": list(argv)})


def tool_text(workspace: Path, tool: str, arguments: dict[str, Any]) -> str:
    # PATH as in the bwrap sandbox: the distribution's python3 runs the fixture's scripts, as in a run.
    ctx = ToolContext(workspace=workspace.resolve(), env=minimal_env(workspace, {"PATH": SANDBOX_PATH}),
                      output_chars=OUTPUT_CHARS, command_timeout_ms=60_000)
    result = run_tool(TOOLS[tool], arguments, ctx)
    assert result.ok, result.text
    return result.text


# ---------------------------------------------------------------- suite files


@pytest.mark.parametrize("suite_id", sorted(TASK_COUNTS))
def test_suite_is_live_only_and_loads(suite_id: str) -> None:
    suite = load_suite(SUITES / suite_id)
    doc = load_json(SUITES / suite_id / "suite.json")
    assert (doc["suiteVersion"], len(suite.tasks)) == (VERSIONS[suite_id], TASK_COUNTS[suite_id])
    assert "Live-only" in doc["description"] and "no cassettes" in doc["description"]
    assert all("live-only" in task.tags for task in suite.tasks)
    assert not (ROOT / "cassettes" / suite_id).exists()
    ids = sorted(task.id for task in suite.tasks)
    assert sorted(p.name for p in (SUITES / suite_id / "fixtures").iterdir()) == ids
    assert sorted(p.stem for p in (SUITES / suite_id / "scripts").iterdir()) == ids
    conf = (ROOT / "conf" / "suite" / f"{suite_id}.yaml").read_text(encoding="utf-8")
    assert conf.startswith("# ") and f"path: suites/{suite_id}\n" in conf and "k: 5\n" in conf


def test_suites_stay_within_their_size_budget() -> None:
    sizes = {suite_id: sum(len(data) for data in files_under(SUITES / suite_id).values())
             for suite_id in TASK_COUNTS}
    assert sum(sizes.values()) < 600_000, sizes
    for suite_id, task in TASKS:
        fixture_bytes = sum(len(data) for data in files_under(SUITES / suite_id / task["fixture"]).values())
        assert fixture_bytes < 150_000, (task["id"], fixture_bytes)


@pytest.mark.parametrize(("suite_id", "task"), TASKS, ids=TASK_IDS)
def test_script_fits_policy_and_budget(suite_id: str, task: dict[str, Any]) -> None:
    script = script_of(suite_id, task)
    calls = [call for turn in script["turns"] for call in turn.get("toolCalls", [])]
    assert script["taskId"] == task["id"] and task["policy"]["mode"] == "auto"
    runs_commands = any(call["name"] == "run_command" for call in calls)
    assert ("process" in task["policy"]["allow"]) == runs_commands, "grant process iff needed"
    assert len(script["turns"]) <= task["budget"]["maxTurns"]
    assert len(calls) <= task["budget"]["maxToolCalls"]
    assert task["budget"]["maxWallMs"] >= 600_000  # long inputs: minutes, not seconds
    assert script["turns"][-1]["content"].startswith("DONE: ")


# ---------------------------------------------------------------- solvable, and only by the work


@pytest.mark.parametrize(("suite_id", "task"), TASKS, ids=TASK_IDS)
def test_shipped_fixture_fails_its_verifiers(suite_id: str, task: dict[str, Any], tmp_path: Path) -> None:
    workspace = copy_fixture(SUITES / suite_id / task["fixture"], tmp_path)
    result = verdicts(workspace, task["verifiers"], snapshot(workspace))
    commands = [v["id"] for v in task["verifiers"] if v["kind"] == "command"]
    assert commands and not any(result[vid] for vid in commands), result


@pytest.mark.parametrize(("suite_id", "task"), TASKS, ids=TASK_IDS)
def test_scripted_solution_passes_every_verifier(suite_id: str, task: dict[str, Any],
                                                 tmp_path: Path) -> None:
    workspace = copy_fixture(SUITES / suite_id / task["fixture"], tmp_path)
    before = snapshot(workspace)
    events = apply_script(workspace, script_of(suite_id, task))
    assert [e for e in events if e.outcome != "ok"] == []
    result = verdicts(workspace, task["verifiers"], before)
    assert all(result.values()), result


# The fact each long-file task hides, and the file it hides in.
BURIED = [
    ("long-context", "buried-module-constant", "legacy_tariffs.py", "SETTLEMENT_CUTOFF_WEEKDAY_MIN = 1065"),
    ("long-context", "cross-file-incident-lookup", "incidents.log", "INC-22598 sev=1"),
    ("long-context", "cross-file-incident-lookup", "services.ini", "[SVC-0713]"),
    ("long-context-stress", "log-trace-reconstruct", "access.log", "re666 retry n=3"),
    ("long-context-stress", "three-hop-power-lookup", "alerts.log", "CRITICAL"),
    ("long-context-stress", "three-hop-power-lookup", "hosts.csv", "db-17,R-118"),
    ("long-context-stress", "layered-config-resolution", "conf/base.conf", "[payments.retry]\n"),
]


@pytest.mark.parametrize(("suite_id", "task_id", "rel", "needle"), BURIED, ids=[f"{b[1]}:{b[2]}" for b in BURIED])
def test_fact_lies_beyond_the_first_page_of_read_file(suite_id: str, task_id: str, rel: str,
                                                      needle: str) -> None:
    fixture = SUITES / suite_id / "fixtures" / task_id
    assert needle in (fixture / rel).read_text(encoding="utf-8")
    first_page = tool_text(fixture, "read_file", {"path": rel})
    assert "continue with offset=" in first_page and needle not in first_page


# (suite, task, the full command, the narrowed command, what the answer needs)
TRUNCATED = [
    ("long-context", "truncated-command-output", ["python3", "audit.py"],
     ["python3", "audit.py", "--grep", "!!"], ["ACCT-50634"]),
    ("long-context-stress", "paged-report-two-needles", ["python3", "inventory.py"],
     ["python3", "inventory.py", "--page", "7"], ["B-1565"]),
    ("long-context-stress", "paged-report-two-needles", ["python3", "inventory.py"],
     ["python3", "inventory.py", "--page", "11"], ["B-2551"]),
]


@pytest.mark.parametrize(("suite_id", "task_id", "full", "narrow", "needles"), TRUNCATED,
                         ids=[" ".join(t[3][1:]) for t in TRUNCATED])
def test_harness_truncation_hides_the_fact_until_the_command_is_narrowed(
        suite_id: str, task_id: str, full: list[str], narrow: list[str], needles: list[str]) -> None:
    fixture = SUITES / suite_id / "fixtures" / task_id
    shown = shown_output(fixture, tuple(full))  # the same full command for both pages of the paged report
    assert "[truncated: stdout was " in shown and "summary" in shown
    assert not any(needle in shown for needle in needles)
    narrowed = tool_text(fixture, "run_command", {"argv": narrow})
    assert "[truncated" not in narrowed and all(needle in narrowed for needle in needles)


# ---------------------------------------------------------------- the chain-walk generator


def test_generator_is_deterministic() -> None:
    first, second = generate_instance(3), generate_instance(3)
    assert dump_json(list(first)) == dump_json(list(second))
    assert generate_instance(3, seed=1)[1] != first[1] and generate_instance(4)[1] != first[1]


@pytest.mark.parametrize("index", range(1, 6))
def test_bundled_instance_is_the_generators_output(index: int) -> None:
    task, files, script = generate_instance(index)
    bundled = next(t for t in load_json(BUNDLED / "suite.json")["tasks"] if t["id"] == task["id"])
    assert bundled == task
    assert files_under(BUNDLED / task["fixture"]) == {rel: text.encode() for rel, text in files.items()}
    assert (BUNDLED / "scripts" / f"{task['id']}.json").read_bytes() == dump_json(script)


RULE_TEXT = [
    "1. Each segment gets one line, in walk order, of the form `NN~CODE`: NN is the segment's number as two digits "
    "(01 for segment 1, ..., 16 for segment 16) and CODE is the segment's token in upper case (segment 3 with token "
    "`token-07` is the line `03~TOKEN-07`).",
    "2. The first line of the file is exactly `# walk-report`.",
    "3. The last line of the file is exactly `-- end of walk --`, and the file ends with a single newline after it "
    "(no empty line follows).",
]
VERIFIERS = ["rule-1-nn-code-upper", "rule-2-walk-report-header", "rule-3-end-of-walk-footer", "walk"]


@pytest.mark.parametrize("index", [1, 2, 3, 4, 5, 6, 40])
def test_every_instance_states_the_walk_report_rules_once_with_a_verifier_each(index: int) -> None:
    task, _, script = generate_instance(index)
    assert [line for line in task["prompt"].splitlines() if line[:3] in ("1. ", "2. ", "3. ")] == RULE_TEXT
    assert all(task["prompt"].count(rule[3:]) == 1 for rule in RULE_TEXT)
    assert [v["id"] for v in task["verifiers"]] == VERIFIERS
    assert [v["expectStdoutIncludes"] for v in task["verifiers"]] == [f"{vid.upper()} OK" for vid in VERIFIERS]
    report = script["turns"][-2]["toolCalls"][0]["arguments"]["content"]
    lines = report.split("\n")
    assert lines[0] == "# walk-report" and lines[-2:] == ["-- end of walk --", ""] and len(lines) == 19
    assert [line[:3] for line in lines[1:17]] == [f"{n:02d}~" for n in range(1, 17)]
    assert all(line == line.upper() for line in lines[1:17])


def test_the_baseline_keeps_its_one_ambiguous_rule_and_one_verifier() -> None:
    task, files, script = generate_baseline()
    bundled = next(t for t in load_json(BUNDLED / "suite.json")["tasks"] if t["id"] == "chain-walk-format-rule")
    assert bundled == task
    assert files_under(BUNDLED / task["fixture"]) == {rel: text.encode() for rel, text in files.items()}
    assert (BUNDLED / "scripts" / "chain-walk-format-rule.json").read_bytes() == dump_json(script)
    assert task["prompt"].endswith("write result.txt, one line per segment in walk order, formatted `NN~CODE`.\n"
                                   "Do not change any other file.")
    assert [v["id"] for v in task["verifiers"]] == ["format-rule"] and "baseline" in task["tags"]
    assert files != generate_instance(1)[1]  # a workspace of its own


def _break(kind: str, text: str) -> str:
    """A walk report (``expected_output``) with one thing wrong: a rule dropped, or the walk."""
    lines = text.split("\n")
    if kind == "rule-1-nn-code-upper":  # the codes as the tokens are written, in lower case
        lines[1:17] = [line.lower() for line in lines[1:17]]
    elif kind == "rule-2-walk-report-header":
        lines = lines[1:]
    elif kind == "rule-3-end-of-walk-footer":  # one empty line too many after the footer
        lines.append("")
    else:  # the walk: segments 2 and 3 swapped, each line still numbered in order
        second, third = lines[2].split("~")[1], lines[3].split("~")[1]
        lines[2], lines[3] = f"02~{third}", f"03~{second}"
    return "\n".join(lines)


# Two instances, each judged right as written; every rule (and the walk) broken in one of them, where
# all four verifiers are judged again (a command each): only the broken one may fail.
@pytest.mark.slow
@pytest.mark.parametrize(("index", "broken_ones", "crlf"), [(1, VERIFIERS[:2], True), (4, VERIFIERS[2:], False)],
                         ids=["instance-1", "instance-4"])
def test_each_rule_is_judged_by_its_own_verifier(index: int, broken_ones: list[str], crlf: bool,
                                                 tmp_path: Path) -> None:
    task, files, _ = generate_instance(index)
    tokens = [_field(files[path], "token: ") for path in _chain_paths(files)]
    good = expected_output((tokens, _chain_paths(files)))
    (tmp_path / "result.txt").write_text(good, encoding="utf-8")
    assert all(verdicts(tmp_path, task["verifiers"], {}).values())
    for broken in broken_ones:
        (tmp_path / "result.txt").write_bytes(_break(broken, good).encode())
        result = verdicts(tmp_path, task["verifiers"], {})
        assert [vid for vid, ok in result.items() if not ok] == [broken]
    if crlf:
        (tmp_path / "result.txt").write_bytes(good.replace("\n", "\r\n").encode())  # the lines are not exact
        assert not any(verdicts(tmp_path, task["verifiers"], {})[vid] for vid in VERIFIERS[:3])


@pytest.mark.slow
def test_the_baseline_reads_its_rule_strictly(tmp_path: Path) -> None:
    task, files, script = generate_baseline()
    strict = script["turns"][-2]["toolCalls"][0]["arguments"]["content"]
    readings = {strict: True, strict.lower(): False,  # CODE as the token is written
                "".join(f"{line[1:] if line[0] == '0' else line}\n" for line in strict.splitlines()): False,  # 1~
                "# walk-report\n" + strict + "-- end of walk --\n": False}  # the newer rules' frame
    for text, passes in readings.items():
        (tmp_path / "result.txt").write_text(text, encoding="utf-8")
        assert verdicts(tmp_path, task["verifiers"], {}) == {"format-rule": passes}, text[:40]


def _field(text: str, prefix: str) -> str:
    return next(line[len(prefix):] for line in text.splitlines() if line.startswith(prefix))


def _chain_paths(files: dict[str, str]) -> list[str]:
    """Walk the chain the way the prompt describes it."""
    path = _field(files["start.txt"], "The walk starts at: ")
    paths = []
    while path != "END":
        paths.append(path)
        path = _field(files[path], "next: ")
    assert len(paths) == 16
    return paths


# ---------------------------------------------------------------- lab gen-stress


def test_gen_stress_writes_a_loadable_suite_whose_first_five_are_bundled(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    result = run_cmd(["lab", "gen-stress", "instances=7", f"out={out}"], tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    suite = load_suite(out)
    assert suite.id == GENERATED_SUITE_ID and [t.id for t in suite.tasks] == [
        f"chain-walk-rules-{n:02d}" for n in range(1, 8)]
    bundled = {t["id"]: t for t in load_json(BUNDLED / "suite.json")["tasks"]}
    generated = {t["id"]: t for t in load_json(out / "suite.json")["tasks"]}
    for n in range(1, 6):
        task_id = f"chain-walk-rules-{n:02d}"
        assert generated[task_id] == bundled[task_id]
        assert files_under(out / "fixtures" / task_id) == files_under(BUNDLED / "fixtures" / task_id)
        assert (out / "scripts" / f"{task_id}.json").read_bytes() == (
            BUNDLED / "scripts" / f"{task_id}.json").read_bytes()


def test_gen_stress_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the real `lab gen-stress` process is run above.
    out = tmp_path / "generated"
    assert gen_stress(["instances=2", f"out={out}"]) == 0
    capsys.readouterr()
    assert gen_stress(["instances=1", f"out={out}"]) == 1
    stderr = capsys.readouterr().err
    assert "force=true" in stderr
    assert stderr.count("\n") == 1 and len(load_suite(out).tasks) == 2
    assert gen_stress(["instances=1", f"out={out}", "force=true"]) == 0, capsys.readouterr().err
    assert [t.id for t in load_suite(out).tasks] == ["chain-walk-rules-01"]
    assert sorted(p.name for p in (out / "fixtures").iterdir()) == ["chain-walk-rules-01"]


def test_gen_stress_force_never_replaces_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me\n", encoding="utf-8")
    assert gen_stress(["instances=1", f"out={tmp_path}", "force=true"]) == 1
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "keep me\n"


def test_gen_stress_bad_instances_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert gen_stress(["instances=abc"]) == 1
    assert capsys.readouterr() == ("", "lab gen-stress: instances must be a positive integer, got 'abc'\n")


@pytest.mark.parametrize(("args", "message"), [
    ([], "missing instances=N"),
    (["instances=0"], "instances must be a positive integer, got '0'"),
    (["instances=2", "colour=red"], "unknown option 'colour'"),
    (["instances=2", "force=maybe"], "force: expected true or false, got 'maybe'"),
])
def test_gen_stress_usage_errors(args: list[str], message: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert gen_stress([*args, f"out={tmp_path / 'x'}"] if args else []) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_gen_stress_defaults_to_a_new_directory_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert gen_stress(["instances=1"]) == 0
    assert load_suite(tmp_path / "long-context-stress-generated").tasks[0].id == "chain-walk-rules-01"
