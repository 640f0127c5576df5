"""Execute one run: fixture copy → agent → verifiers → run record (SPEC X2).

Infrastructure failures (workspace, provider, cassette, a verifier that cannot
run) become ``status: "error"`` with a classified cause; only a bug in the lab
escapes as an exception, and even that is recorded as an ``internal`` error.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import Any, Literal

from lab.config.compose import EffectiveConfig
from lab.config.identity import runtime_settings
from lab.errors import LabError
from lab.execute.context import EvalContext
from lab.execute.events import utc_now
from lab.execute.harness import execution_facts
from lab.execute.plan import RunSpec, harness_digest
from lab.execute.recording import (
    cassette_header,
    credential_env,
    effective_policy,
    recorded_at,
    redact_record,
    replay_preconditions,
    write_recording,
)
from lab.replay.cassette import (
    Normaliser,
    Recorder,
    Replayer,
    cassette_path,
    read_cassette,
)
from lab.suites.load import Task

__all__ = ["RECORD_SCHEMA_VERSION", "EvalContext", "Status", "agent_settings", "error_record", "execute_run"]

RECORD_SCHEMA_VERSION = 1
Status = Literal["pass", "fail", "budget_exceeded", "error"]


def execute_run(ctx: EvalContext, spec: RunSpec) -> dict[str, Any]:
    """Run ``spec`` and return its run record (a JSON-able dict).

    The record's first key is ``schemaVersion``; statuses are ``pass``,
    ``fail``, ``budget_exceeded`` and ``error`` (SPEC X2).
    """
    task = ctx.suite.task(spec.task_id)
    started_at = utc_now()
    t0 = time.monotonic()
    record = _record_base(ctx, spec, started_at)
    record["expectedOutcome"] = task.expected_outcome  # how the claim is read (lab.report.metrics)
    workspace: Path | None = None
    try:
        from lab.sandbox.workspace import create_workspace, snapshot

        sandbox = ctx.sandbox_in_force()
        record["sandbox"] = sandbox.name
        workspace = create_workspace(task.fixture, git_init=task.fixture_git,
                                     parent=sandbox.run_root, sandbox=sandbox.backend, cancelled=ctx.cancel.is_set)
        baseline = snapshot(workspace)
        if ctx.config.data["agent"].get("kind") == "command":
            from lab.execute.agent_cassettes import CassetteHooks
            from lab.execute.command_run import run_command_agent

            hooks = CassetteHooks(cassette_header, replay_preconditions, recorded_at)
            run_command_agent(ctx, task, workspace, baseline, record, hooks)
        else:
            _run_agent_and_verify(ctx, task, workspace, baseline, record)
    except LabError as exc:
        record.update(status="error", error={"kind": _error_kind(exc), "message": str(exc)})
    except Exception as exc:  # a bug in the lab: recorded as data, the eval goes on
        record.update(status="error", error={
            "kind": "internal", "message": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8)})
    finally:
        record["wallMs"] = int((time.monotonic() - t0) * 1000)
        record["finishedAt"] = utc_now()
        if workspace is not None:
            _dispose_or_error(ctx, spec, workspace, record)
    from lab.execute.fieldcap import cap_fields

    return dict(cap_fields(redact_record(ctx, record)))  # redact first: a cut must not split a key


def error_record(ctx: EvalContext, spec: RunSpec, kind: str, message: str) -> dict[str, Any]:
    """The record of a run that could not execute (``status: error``, the cause classified as ``kind``)."""
    now = utc_now()
    record = _record_base(ctx, spec, now)
    record.update(error={"kind": kind, "message": message}, finishedAt=now, wallMs=0)
    return record


def _run_agent_and_verify(ctx: EvalContext, task: Task, workspace: Path,
                          baseline: dict[str, str], record: dict[str, Any]) -> None:
    from lab.agents.builtin.loop import run_agent
    from lab.execute.verifiers import run_verifiers, score
    provider, recorder, replayer = _provider(ctx, task, workspace, record)
    result = run_agent(task_prompt=task.prompt, workspace=workspace, provider=provider,
                       settings=agent_settings(ctx.config), policy=_policy(ctx, task),
                       budget=_budget(task), env=ctx.env, cancel=ctx.cancel,
                       sandbox=ctx.sandbox_in_force().backend)
    record.update(
        claim=result.claim, stopReason=result.stop_reason, budgetExceeded=result.budget_exceeded,
        finalMessage=result.final_message, turns=result.turns, toolCalls=result.tool_calls,
        compactions=result.compactions, events=result.events,
        usage=_usage_block(result), compactionUsage=_usage_json(result.compaction_usage),
        incidents=[e for e in result.events if e.get("type") == "incident"],
        retries=sum(1 for e in result.events if e.get("type") == "retry"),
    )
    if recorder is not None and recorder.calls:  # errored runs too: their failure must replay
        write_recording(ctx, task, recorder, record, result.error)
    error = result.error
    if error is None and replayer is not None and replayer.unused:
        error = {"kind": "replay_divergence", "cause": "unused_calls", "callIndex": replayer.position,
                 "field": "(call never made)",
                 "message": f"{replayer.source}: call {replayer.position}: the recording has "
                            f"{replayer.unused} more call(s) the harness never made"}
    if error is not None:
        record["status"] = "error"
        record["error"] = error
        if error.get("kind") == "replay_divergence":
            record["divergence"] = {k: error.get(k) for k in ("callIndex", "field", "recorded", "actual")}
        return
    results = run_verifiers(list(task.verifiers), workspace=workspace, baseline=baseline,
                            events=result.events, env={}, cancel=ctx.cancel,
                            sandbox=ctx.sandbox_in_force().backend, answer=result.final_message)
    record["verifiers"] = [r.to_json() for r in results]
    record["score"] = score(results)
    record["status"] = _status(result.stop_reason, [r.status for r in results])
    if any(r.status == "error" for r in results):
        bad = next(r for r in results if r.status == "error")
        record["error"] = {"kind": "verifier", "message": f"verifier {bad.id}: {bad.detail}"}


def _status(stop_reason: str, verifier_statuses: list[str]) -> Status:
    if "error" in verifier_statuses:
        return "error"
    if stop_reason == "budget_exceeded":
        return "budget_exceeded"
    if stop_reason != "answered":
        return "fail"  # truncated output is the model's failure (SPEC P1)
    return "pass" if all(s == "pass" for s in verifier_statuses) else "fail"


def agent_settings(config: EffectiveConfig) -> Any:
    """The harness settings from the ``agent`` and ``provider`` groups."""
    from lab.agents.builtin.loop import DEFAULT_SYSTEM_PROMPT, AgentSettings

    agent, provider = config.data["agent"], config.data["provider"]
    return AgentSettings(
        model=provider["model"], system_prompt=agent["system_prompt"] or DEFAULT_SYSTEM_PROMPT,
        tools=tuple(agent["tools"]), max_output_tokens=agent["max_output_tokens"],
        temperature=agent["temperature"], reasoning_effort=provider["reasoning_effort"],
        compaction_enabled=agent["compaction"]["enabled"],
        compaction_threshold=agent["compaction"]["threshold"],
        max_context_chars=agent["limits"]["max_context_chars"],
        tool_output_chars=agent["limits"]["tool_output_chars"],
        command_timeout_ms=agent["limits"]["command_timeout_ms"],
        send_reasoning=bool(provider.get("reasoning_in_history")))


def _policy(ctx: EvalContext, task: Task) -> Any:
    from lab.agents.builtin.policy import Policy

    p = effective_policy(ctx.config, task)
    return Policy(mode=p["mode"], allow=frozenset(p["allow"]), read_only=p["readOnly"])


def _budget(task: Task) -> Any:
    from lab.agents.builtin.budget import Budget

    b = task.budget
    return Budget(max_turns=b["maxTurns"], max_wall_ms=b["maxWallMs"],
                  max_tokens=b.get("maxTokens"), max_tool_calls=b.get("maxToolCalls"))


def _provider(ctx: EvalContext, task: Task, workspace: Path,
              record: dict[str, Any]) -> tuple[Any, Recorder | None, Replayer | None]:
    from lab.export.secrets import SecretScanner

    scanner = SecretScanner(env=ctx.env, credential_env=credential_env(ctx))
    inside = str(ctx.sandbox_in_force().backend.inside_path(workspace))
    from lab.replay.scrub import path_bases_of, request_scrubber

    normalise = Normaliser(workspace=workspace, rules=task.replay_normalize, aliases=(inside,),
                           redact=request_scrubber(scanner, path_bases_of(ctx.env)))
    if ctx.config.mode == "replay":
        path = cassette_path(ctx.cassette_dir, ctx.suite.id, task.id)
        header, calls = read_cassette(path)
        record["warnings"] = replay_preconditions(ctx, task, header, str(path))
        replayer = Replayer(header=header, calls=calls, normalise=normalise, source=str(path))
        return replayer, None, replayer
    from lab.providers.registry import make_provider

    provider = make_provider(ctx.config.data["provider"], suite_dir=ctx.suite.path,
                             task_id=task.id, env=ctx.env)
    if ctx.call_gate is not None:  # provider.max_concurrent_calls (lab.execute.call_cap)
        from lab.execute.call_cap import GatedProvider

        provider = GatedProvider(provider, ctx.call_gate)
    if ctx.config.mode == "record":
        recorder = Recorder(inner=provider, normalise=normalise)
        return recorder, recorder, None
    return provider, None, None


def _usage_json(usage: Any) -> dict[str, Any] | None:
    return None if usage is None else dict(usage.to_json())


def _usage_block(result: Any) -> dict[str, Any] | None:
    """Main-loop usage; None (absent, never 0) when any main turn lacked it (M4)."""
    if result.usage is None:
        return None
    block = _usage_json(result.usage) or {}
    block["cachedPartial"] = 0 < result.cached_turns_reported < result.turns
    if result.cached_turns_reported < result.turns:
        block["cachedInputTokens"] = None
    return block


def _record_base(ctx: EvalContext, spec: RunSpec, started_at: str) -> dict[str, Any]:
    provider = ctx.config.data["provider"]
    return {
        "schemaVersion": RECORD_SCHEMA_VERSION, "suiteId": ctx.suite.id,
        "suiteVersion": ctx.suite.version, "suiteDigest": ctx.suite.digest,
        "taskId": spec.task_id, "repetition": spec.repetition, "baseSeed": spec.base_seed,
        "seed": spec.seed, "configHash": ctx.config_hash, "harnessDigest": harness_digest(),
        "mode": ctx.config.mode, "provider": provider["name"], "model": provider["model"],
        "sandbox": None, "status": "error", "claim": "none", "stopReason": None, "budgetExceeded": None,
        "finalMessage": None, "verifiers": [], "score": None, "usage": None,
        "compactionUsage": None, "turns": 0, "toolCalls": 0, "compactions": 0,
        "events": [], "incidents": [], "retries": 0, "error": None, "divergence": None,
        "startedAt": started_at, "finishedAt": None, "wallMs": None, "workspace": None,
        "warnings": [], "runtime": {**runtime_settings(ctx.config.data), **execution_facts(ctx.sandbox_name())},
    }


def _dispose(ctx: EvalContext, spec: RunSpec, workspace: Path, record: dict[str, Any]) -> None:
    from lab.sandbox.workspace import remove_workspace

    if ctx.config.data["keep"] and ctx.work_dir is not None:
        kept = ctx.work_dir / spec.task_id / spec.name
        if kept.exists():
            remove_workspace(kept)
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.replace(workspace, kept)
        record["workspace"] = str(kept)
    else:
        remove_workspace(workspace)


def _dispose_or_error(ctx: EvalContext, spec: RunSpec, workspace: Path, record: dict[str, Any]) -> None:
    """Remove (or keep) the task copy; a failure makes this one run an infrastructure error.

    A copy that cannot be removed (a verifier made a file immutable, a busy
    mount) says nothing about the agent: the run becomes ``status: error``
    (kind ``workspace``, the message naming the path that stayed, the verdict
    it had kept under ``error.verdict``) and the eval goes on. The run's
    processes were released before (every command ends with its process
    group); the copy stays in the run root for the lab's exit or the next
    command's reaper (:mod:`lab.sandbox.reaper`), which report it.
    """
    try:
        _dispose(ctx, spec, workspace, record)
    except (LabError, OSError) as exc:
        message = str(exc) if isinstance(exc, LabError) else \
            f"cannot dispose of the task copy {str(workspace)!r}: {exc.strerror or exc} ({exc.filename})"
        error: dict[str, Any] = {"kind": "workspace", "message": message}
        if record.get("status") != "error":
            error["verdict"] = record.get("status")
        elif record.get("error"):
            error["message"] = f"{message}; before that: {record['error'].get('message')}"
        record.update(status="error", error=error)


def _error_kind(exc: LabError) -> str:
    from lab import errors

    kinds: list[tuple[type[LabError], str]] = [
        (errors.CassetteMiss, "replay_divergence"), (errors.CassetteError, "cassette"),
        (errors.WorkspaceError, "workspace"), (errors.ProviderError, "provider"),
        (errors.ProcessStartError, "process"), (errors.SandboxError, "sandbox")]
    return next((kind for cls, kind in kinds if isinstance(exc, cls)), "lab")
