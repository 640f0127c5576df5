"""Every report file over a corpus of real run records, against golden files.

``corpus/records.jsonl`` holds 124 run records the lab wrote during its own
end-to-end tests (smoke-coding, core, holdout, tool-sequences, long-context,
the wire-kinds and identity suites, the sandbox escape corpus; the built-in
agent and the reference command agent; passes, failures, budgets, provider,
cassette, incomplete-response and replay-divergence errors, refusal tasks,
usage_unreported / empty_response / unencodable_text incidents, cache writes,
provider cost, redactions, sandbox and runtime fields). :func:`variants` adds
a few edited copies for what those runs never produced (cached input on every
or only some turns, an errored verifier beside a passing one, a long event
log, characters XML cannot hold).

The golden files under ``tests/golden/report-corpus/`` were written by the
in-memory writer as it was before reports were streamed (build_report +
write_report over every loaded record, filtered as ``report_action`` filters
them); both that writer and the streaming one
(``lab.report.write_report_from_files``, what an eval's report task calls)
are held to them, file by file, and to each other byte for byte.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from lab.report import build_report, write_report, write_report_from_files
from tests.helpers.golden import check_golden

# One worker builds this module's shared fixture (scope="module") once, instead of each worker that runs one of its tests.
pytestmark = pytest.mark.xdist_group("report-corpus")

CORPUS = Path(__file__).resolve().parent / "corpus" / "records.jsonl"
GOLDEN_FILES = ("report.json", "report.md", "events.jsonl", "index.html", "junit.xml")  # runs.jsonl: see below


def corpus() -> list[dict[str, Any]]:
    """The real records, then their :func:`variants`."""
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]
    return records + variants(records)


def _copy(record: dict[str, Any], repetition: int) -> dict[str, Any]:
    clone = copy.deepcopy(record)
    clone["repetition"] = repetition
    clone["seed"] = clone["baseSeed"] + repetition
    clone["inputs"]["repetition"] = repetition
    return clone


def variants(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Edited copies of real records for cases the e2e runs do not produce (new repetitions of their tasks)."""
    passing = [r for r in records if r["status"] == "pass" and r["usage"] and r["verifiers"]]
    failing = [r for r in records if r["status"] == "fail" and r["usage"]]
    out = []
    for n, base in enumerate(passing[:6]):  # cached input on every turn (one above its input: not reported)
        clone = _copy(base, 100 + n)
        usage = clone["usage"]
        usage["cachedInputTokens"] = usage["inputTokens"] // (n + 2) if n != 5 else usage["inputTokens"] + 1
        usage["cachedPartial"] = False
        out.append(clone)
    for n, base in enumerate(failing[:3]):  # cached input on some turns only
        clone = _copy(base, 200 + n)
        clone["usage"]["cachedInputTokens"] = None
        clone["usage"]["cachedPartial"] = True
        out.append(clone)
    partial = _copy(passing[7], 300)  # one verifier passed, another could not run: an errored run
    partial["status"] = "error"
    partial["score"] = None
    partial["error"] = {"kind": "verifier", "message": "verifier extra: cannot start:\n<no such file> & more"}
    partial["verifiers"] = partial["verifiers"][:1] + [
        {"id": "extra", "kind": "command", "status": "error", "weight": 2.0, "detail": "cannot start",
         "diagnostics": {"exitCode": None, "stderrTail": "bad \x00\x07 bytes \ud800 and \x1b[31mred\x1b[0m\n"}}]
    out.append(partial)
    chatty = _copy(failing[0], 301)  # more events than the page shows, a budget on turns
    chatty["status"], chatty["budgetExceeded"], chatty["stopReason"] = "budget_exceeded", "maxTurns", "budget_exceeded"
    event = next(e for e in chatty["events"] if e.get("type") == "tool_call")
    chatty["events"] = [{**event, "seq": s, "turn": s // 2} for s in range(620)]
    chatty["finalMessage"] = "DONE | not really\nsecond line with <tags> & ampersands"
    out.append(chatty)
    return out


CASES: dict[str, dict[str, Any]] = {
    "priced": {"mode": "live", "provider": "openai",
             "rates": {"input": 2.5, "output": 10.0, "cached_input": 0.25, "cache_write": 3.125}},
    "replay": {"mode": "replay", "provider": "scripted", "rates": {"input": None, "output": None}},
    "voided": {"mode": "live", "provider": "scripted", "rates": {"input": 1.0, "output": 4.0},
               "missing": 9, "foreign": 7},
}


def header(case: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A header as ``lab.build.actions.report_header`` writes it."""
    spec = CASES[case]
    tasks = {r["taskId"] for r in records}
    return {"runId": f"corpus.v1.0.0.{'c' * 12}.k3.s0", "suiteId": "corpus", "suiteVersion": "1.0.0",
            "suiteDigest": "a" * 64, "harnessVersion": "0.1.0", "harnessDigest": "b" * 64, "configHash": "c" * 64,
            "variant": "baseline", "provider": spec["provider"], "model": "gpt-test",
            "endpoint": {"provider": spec["provider"], "url": "http://127.0.0.1:8080/v1", "key": "openai-0f1e2d3c"},
            "mode": spec["mode"], "sandbox": "bwrap", "k": 3, "seed": 0, "rates": dict(spec["rates"]),
            "compaction": {"enabled": True, "threshold": 0.8},
            "agent": {"name": "builtin", "kind": "builtin", "version": None},
            "runsRequested": len(records), "tasksRequested": len(tasks),
            "reportCodeDigest": "d" * 64}


def stored(case: str, root: Path) -> tuple[dict[str, Any], list[Path], list[dict[str, Any]]]:
    """(header, record paths in planned order, each path's planned inputs); some missing or foreign in "voided"."""
    spec = CASES[case]
    records = corpus()
    rng = random.Random(case)
    rng.shuffle(records)  # the planned order is shuffled (lab.execute.plan)
    paths, expected = [], []
    for n, record in enumerate(records):
        path = root / "runs" / record["taskId"] / f"s{record['baseSeed']}-r{record['repetition']}.json"
        expected.append(copy.deepcopy(record["inputs"]))
        paths.append(path)
        if n < spec.get("missing", 0):
            continue  # planned, never run
        if n < spec.get("missing", 0) + spec.get("foreign", 0):
            record = copy.deepcopy(record)
            record["inputs"]["harnessDigest"] = "d" * 64  # made by another harness: not this eval's
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return header(case, records), paths, expected


def write_in_memory(out: Path, head: dict[str, Any], paths: list[Path], expected: list[dict[str, Any]]) -> None:
    """The report as ``report_action`` built it before streaming: every record loaded, then filtered."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths if p.exists()]
    wanted = {json.dumps(i, sort_keys=True) for i in expected}
    runs = [r for r in runs if json.dumps(r.get("inputs"), sort_keys=True) in wanted]
    doc = build_report({**head, "voided": len(runs) < len(paths)}, runs)
    write_report(out, doc, runs)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp(f"corpus-{request.param}")
    head, paths, expected = stored(request.param, root)
    write_in_memory(root / "memory", head, paths, expected)
    kept = write_report_from_files(root / "streamed", head, paths, expected=expected)
    assert kept == sum(1 for _ in (root / "runs").rglob("*.json")) - CASES[request.param].get("foreign", 0)
    return request.param, root


@pytest.mark.parametrize("name", GOLDEN_FILES)
@pytest.mark.parametrize("writer", ["memory", "streamed"])
def test_report_matches_golden(request: pytest.FixtureRequest, case: tuple[str, Path], writer: str, name: str) -> None:
    name_of_case, root = case
    check_golden(request.config, f"report-corpus/{name_of_case}/{name}",
                 (root / writer / name).read_text(encoding="utf-8"), tmp_paths=(root,))


def test_streamed_report_is_the_in_memory_one_byte_for_byte(case: tuple[str, Path]) -> None:
    _, root = case
    assert tree(root / "streamed") == tree(root / "memory")


def test_runs_jsonl_holds_each_kept_record_in_report_order(case: tuple[str, Path]) -> None:
    from lab.files import dumps_line

    _, root = case
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((root / "runs").rglob("*.json"))]
    kept = sorted((r for r in runs if r["inputs"]["harnessDigest"] != "d" * 64),
                  key=lambda r: (r["taskId"], r["repetition"], r["seed"]))
    assert (root / "memory" / "runs.jsonl").read_text(encoding="utf-8") == "".join(dumps_line(r) for r in kept)
