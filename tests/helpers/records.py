"""Hand-built run records and report headers (valid against the shipped schemas).

Every record is deterministic: timestamps derive from the task and repetition,
so reports built from them can be compared byte for byte.
"""

from __future__ import annotations

from typing import Any

SHA_SUITE = "a" * 64
SHA_HARNESS = "b" * 64
SHA_CONFIG = "c" * 64

Verdict = tuple[str, str] | tuple[str, str, float]  # (id, status[, weight])


def _verifiers(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    out = []
    for verdict in verdicts:
        vid, status = verdict[0], verdict[1]
        weight = float(verdict[2]) if len(verdict) > 2 else 1.0  # type: ignore[misc]
        diagnostics: dict[str, Any] = {"exitCode": 0 if status == "pass" else 1, "stderrTail": ""}
        if status != "pass":
            diagnostics["stderrTail"] = f"AssertionError: {vid} failed\n"
        out.append({"id": vid, "kind": "command", "status": status, "weight": weight,
                    "detail": "exit code 0 as expected" if status == "pass" else "exit code 1, expected 0",
                    "diagnostics": diagnostics})
    return out


def score_of(verifiers: list[dict[str, Any]]) -> float | None:
    """Weighted share of passing verifiers, as lab.execute.verifiers.score computes it (V7)."""
    total = sum(v["weight"] for v in verifiers)
    if total <= 0:
        return None
    return sum(v["weight"] for v in verifiers if v["status"] == "pass") / total


def _timestamp(task_id: str, repetition: int, offset_s: int) -> str:
    seconds = (sum(map(ord, task_id)) + 7 * repetition + offset_s) % 3600
    return f"2030-01-01T10:{seconds // 60:02d}:{seconds % 60:02d}.000Z"


def make_record(task_id: str = "task-a", repetition: int = 0, *, status: str = "pass",
                claim: str | None = None, verdicts: list[Verdict] | None = None,
                tokens: tuple[int, int] | None = (1000, 200), cached: int | None = None,
                cached_partial: bool = False, wall_ms: int = 1000, error: dict[str, Any] | None = None,
                suite_id: str = "demo", seed: int | None = None, turns: int = 2,
                workspace: str | None = None) -> dict[str, Any]:
    """A run record (``run-record.schema.json``).

    Args:
        status: pass, fail, budget_exceeded or error.
        claim: the agent's claim; default success for pass, gave_up otherwise.
        verdicts: (verifier id, status[, weight]); default one verifier "tests"
            passing for pass and failing for fail/budget_exceeded, none for error.
        tokens: main-loop (input, output) tokens; None = usage not reported.
        cached: cached input tokens when every turn reported them.
        cached_partial: only some turns reported cached tokens.
        error: the error block; default a provider error for status error.
    """
    if verdicts is None:
        verdicts = [] if status == "error" else [("tests", "pass" if status == "pass" else "fail")]
    verifiers = _verifiers(verdicts)
    usage = None
    if tokens is not None:
        usage = {"inputTokens": tokens[0], "outputTokens": tokens[1],
                 "cachedInputTokens": None if cached_partial else cached, "cachedPartial": cached_partial}
    if status == "error" and error is None:
        error = {"kind": "provider", "message": "connection refused by 127.0.0.1:9"}
    events: list[dict[str, Any]] = [
        {"seq": 0, "type": "model_call", "purpose": "main", "turn": 1, "latencyMs": 120,
         "finishReason": "tool_calls", "toolCalls": 1,
         "usage": None if tokens is None else {"inputTokens": tokens[0], "outputTokens": tokens[1],
                                               "cachedInputTokens": cached}},
        {"seq": 1, "type": "tool_call", "turn": 1, "id": "call_0_0", "tool": "read_file",
         "arguments": {"path": "calc.py"}, "effect": "read", "outcome": "ok", "error": None}]
    incidents = []
    if tokens is None:
        incidents.append({"seq": 2, "type": "incident", "kind": "usage_unreported",
                          "detail": "the provider reported no usage"})
        events.append(incidents[0])
    answered = status in ("pass", "fail")
    return {
        "schemaVersion": 1, "suiteId": suite_id, "suiteVersion": "1.0.0", "suiteDigest": SHA_SUITE,
        "taskId": task_id, "repetition": repetition, "baseSeed": 0,
        "seed": repetition if seed is None else seed, "configHash": SHA_CONFIG, "harnessDigest": SHA_HARNESS,
        "mode": "live", "provider": "openai", "model": "gpt-test", "status": status,
        "claim": claim if claim is not None else ("success" if status == "pass" else "gave_up"),
        "stopReason": "answered" if answered else ("budget_exceeded" if status == "budget_exceeded" else "error"),
        "budgetExceeded": "maxTurns" if status == "budget_exceeded" else None,
        "finalMessage": "DONE: fixed it." if status == "pass" else None,
        "verifiers": verifiers, "score": score_of(verifiers) if verifiers else None, "usage": usage,
        "compactionUsage": None, "turns": turns, "toolCalls": 1, "compactions": 0, "events": events,
        "incidents": incidents, "error": error, "divergence": None,
        "startedAt": _timestamp(task_id, repetition, 0), "finishedAt": _timestamp(task_id, repetition, 5),
        "wallMs": wall_ms, "workspace": workspace,
    }


def make_header(*, mode: str = "live", k: int = 2, rates: tuple[float | None, float | None] = (None, None),
                suite_id: str = "demo") -> dict[str, Any]:
    """The header ``lab.build.graph`` passes to ``build_report``."""
    return {"runId": f"{suite_id}.cccccccccccc.k{k}.s0", "suiteId": suite_id, "suiteVersion": "1.0.0",
            "suiteDigest": SHA_SUITE, "harnessVersion": "0.1.0", "harnessDigest": SHA_HARNESS,
            "configHash": SHA_CONFIG, "variant": "baseline", "provider": "openai", "model": "gpt-test",
            "endpoint": {"provider": "openai", "url": "https://gateway.example:443/v1", "key": "openai-0f1e2d3c"},
            "mode": mode, "k": k, "seed": 0, "rates": {"input": rates[0], "output": rates[1]},
            "compaction": {"enabled": True, "threshold": 0.8}}
