"""Build report documents by hand for the compare, admit and export tests.

A task's runs are a status string, one letter per repetition: ``P`` pass,
``F`` fail, ``B`` budget_exceeded, ``E`` error (``"PPPFF"`` = 3 passes then
2 fails). The records are made here; the report is the lab's own
``build_report`` over them, so it has exactly the shape the lab writes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lab.report import build_report, write_report

STATUS = {"P": "pass", "F": "fail", "B": "budget_exceeded", "E": "error"}
VERIFIER = {"pass": "pass", "fail": "fail", "budget_exceeded": "pass", "error": "error"}


def config_hash(name: str) -> str:
    """A stable 64-hex config hash for a configuration called ``name``."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def run_record(task_id: str, repetition: int, status: str, *, seed: int = 0, mode: str = "live",
               tokens: tuple[int, int] | None = (1000, 200), cached: int | None = None,
               wall_ms: int = 1000, provider: str = "scripted",
               compaction: tuple[int, int] | None = None) -> dict[str, Any]:
    """One run record with one command verifier ``check`` (its status follows the run's).

    ``compaction``: (input, output) tokens of one compaction call, or None for a run without one.
    """
    verdict = VERIFIER[status]
    usage = None if tokens is None else {"inputTokens": tokens[0], "outputTokens": tokens[1],
                                         "cachedInputTokens": cached, "cachedPartial": False}
    return {
        "schemaVersion": 1, "taskId": task_id, "repetition": repetition, "baseSeed": seed,
        "seed": seed + repetition, "mode": mode, "provider": provider, "model": "test-model",
        "status": status, "claim": "success" if status == "pass" else "none",
        "score": 1.0 if verdict == "pass" else (0.0 if verdict == "fail" else None),
        "verifiers": [{"id": "check", "kind": "command", "status": verdict, "weight": 1.0,
                       "detail": f"check {verdict}", "diagnostics": {"exitCode": 0 if verdict == "pass" else 1,
                                                                    "stderrTail": ""}}],
        "usage": usage, "turns": 3, "toolCalls": 2, "compactions": 0 if compaction is None else 1,
        "compactionUsage": None if compaction is None else {"inputTokens": compaction[0],
                                                            "outputTokens": compaction[1]},
        "events": [], "incidents": [],
        "error": {"kind": "provider", "message": "connection refused"} if status == "error" else None,
        "wallMs": wall_ms, "stopReason": "answered" if status != "error" else "error",
        "budgetExceeded": "maxTurns" if status == "budget_exceeded" else None,
    }


def make_records(tasks: dict[str, str], **kwargs: Any) -> list[dict[str, Any]]:
    """Run records for ``{task id: status string}``; ``kwargs`` go to :func:`run_record`."""
    return [run_record(task_id, i, STATUS[letter], **kwargs)
            for task_id, statuses in tasks.items() for i, letter in enumerate(statuses)]


def make_header(*, suite_id: str = "toy", suite_version: str = "1.0.0", suite_digest: str | None = None,
                config: str = "base", mode: str = "live", k: int = 5, seed: int = 0,
                compaction: dict[str, Any] | None = None, rates: dict[str, Any] | None = None,
                provider: str = "scripted") -> dict[str, Any]:
    """A report header; ``compaction=None`` leaves the key out (an older report)."""
    cfg = config_hash(config)
    header: dict[str, Any] = {
        "runId": f"{suite_id}.{cfg[:12]}.k{k}.s{seed}", "suiteId": suite_id, "suiteVersion": suite_version,
        "suiteDigest": suite_digest or config_hash(f"suite {suite_id} {suite_version}"),
        "harnessVersion": "0.1.0", "harnessDigest": config_hash("harness"), "configHash": cfg,
        "variant": config, "provider": provider, "model": "test-model", "mode": mode, "k": k, "seed": seed,
        "rates": rates or {"input": None, "output": None},
    }
    if compaction is not None:
        header["compaction"] = compaction
    return header


def make_report(tasks: dict[str, str], *, tokens: tuple[int, int] | None = (1000, 200), cached: int | None = None,
                wall_ms: int = 1000, records: list[dict[str, Any]] | None = None,
                compaction_tokens: tuple[int, int] | None = None, **header: Any) -> dict[str, Any]:
    """A report document over ``tasks`` (status strings); ``header`` goes to :func:`make_header`.

    ``k`` defaults to the longest status string.
    """
    header.setdefault("k", max(len(s) for s in tasks.values()))
    head = make_header(**header)
    if records is None:
        records = make_records(tasks, seed=head["seed"], mode=head["mode"], tokens=tokens, cached=cached,
                               wall_ms=wall_ms, provider=head["provider"], compaction=compaction_tokens)
    return build_report(head, records)


def write_report_dir(data: Path, doc: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    """Publish ``doc`` as the lab does: ``<data>/<suite>/<cfg12>/reports/<run id>/``; returns that dir."""
    h = doc["header"]
    report_dir = data / h["suiteId"] / h["configHash"][:12] / "reports" / h["runId"]
    write_report(report_dir, doc, records)
    return report_dir
