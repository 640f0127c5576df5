"""A run's recording: the cassette header, the checks before a replay, writing a cassette,
and keeping secrets out of what a run writes (SPEC R1, R4, R5, R6; C4).

The functions take the eval's ``EvalContext`` (``lab.execute.run``) as ``ctx``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.config.compose import EffectiveConfig
from lab.errors import LabError
from lab.execute.events import utc_now
from lab.execute.plan import HARNESS_VERSION
from lab.replay.cassette import Recorder, cassette_path, dump_cassette, read_cassette, write_cassette
from lab.replay.scrub import redact_cassette
from lab.suites.load import Task


def write_recording(ctx: Any, task: Task, recorder: Recorder, record: dict[str, Any],
                     error: dict[str, Any] | None) -> None:
    """Write the cassette with secrets redacted; a run that errored is marked ``outcome: error``."""
    header = cassette_header(ctx, task)
    if error is not None:
        header["outcome"] = "error"
        header["errorKind"] = error.get("kind")
    path = cassette_path(ctx.cassette_dir, ctx.suite.id, task.id)
    header, calls, replaced = redact_cassette(header, recorder.calls, env=ctx.env,
                                              credential_env=credential_env(ctx))
    if replaced:
        record["redactions"] = [{"file": "cassette", **hit} for hit in replaced]
    from lab.replay.scrub import check_secrets

    check_secrets(header, calls, source=str(path), env=ctx.env, credential_env=credential_env(ctx))  # last guard (R4)
    header["recordedAt"] = recorded_at(path, header, calls)
    write_cassette(path, dump_cassette(header, calls))


def credential_env(ctx: Any) -> list[str]:
    """Variables holding this run's credentials (the provider's ``api_key_env``)."""
    return [ctx.config.data["provider"].get("api_key_env") or ""]


def redact_record(ctx: Any, record: dict[str, Any]) -> dict[str, Any]:
    """The run record with every secret replaced by its marker; replacements noted in ``redactions``.

    Covers tool output, prompts, responses and verifier output, so the files
    derived from records (reports, ``runs.jsonl``, exports) hold none either.
    """
    from lab.export.secrets import SecretScanner

    scanner = SecretScanner(env=ctx.env, credential_env=credential_env(ctx))
    body = {k: v for k, v in record.items() if k != "redactions"}
    clean, hits = scanner.redact(body)
    notes = list(record.get("redactions") or []) + [{"file": "record", **h.to_json()} for h in hits]
    if notes:
        clean["redactions"] = notes
    return dict(clean)


def recorded_at(path: Path, header: dict[str, Any], calls: list[dict[str, Any]]) -> str:
    """When the traffic was recorded: kept from the existing cassette when nothing changed.

    Re-recording identical traffic therefore rewrites identical bytes (R6),
    while a cassette whose content changed carries the new time.
    """
    try:
        old_header, old_calls = read_cassette(path)
    except LabError:
        return utc_now()
    previous = old_header.get("recordedAt")
    same = {k: v for k, v in old_header.items() if k != "recordedAt"} == header and old_calls == calls
    return str(previous) if same and isinstance(previous, str) else utc_now()


def effective_policy(config: EffectiveConfig, task: Task) -> dict[str, Any]:
    """Task policy narrowed by the user's grants (SPEC C3): mode, allow, readOnly."""
    allow = sorted(set(task.policy.get("allow", [])) & set(config.data["allow"]))
    read_only = bool(task.policy.get("readOnly", False) or config.data["read_only"])
    return {"mode": task.policy["mode"], "allow": allow, "readOnly": read_only}


def replay_preconditions(ctx: Any, task: Task, header: dict[str, Any], source: str) -> list[str]:
    """Check a cassette against this run before replaying it (SPEC R5).

    Returns:
        Warnings: the recording's config hash differs from this configuration's.

    Raises:
        CassetteError: this run's effective grants differ from the recording's
            (a replay needs the grants it was recorded with).
    """
    from lab.errors import CassetteError

    for key, expected in (("suiteId", ctx.suite.id), ("taskId", task.id)):
        if header.get(key) != expected:
            raise CassetteError(f"{source}: header {key} is {header.get(key)!r}, expected {expected!r} "
                                f"(a cassette of another suite or task)")
    policy = effective_policy(ctx.config, task)
    recorded = header.get("policy")
    if recorded is not None and recorded != policy:
        raise CassetteError(f"{source}: replay needs the recording's grants: recorded {recorded}, "
                            f"this run has {policy} (adjust allow=/read_only= or re-record)")
    warnings = []
    if header.get("configHash") != ctx.config.config_hash("record"):
        # The banner shows the replay-mode hash; the cassette holds a record-mode one: name both.
        warnings.append(f"{source}: recorded with config {str(header.get('configHash'))[:12]}, but these settings "
                        f"record as {ctx.config.config_hash('record')[:12]} (the banner's config "
                        f"{ctx.config.config_hash()[:12]} is the same settings in replay mode); "
                        "requests may diverge")
    return warnings


def cassette_header(ctx: Any, task: Task) -> dict[str, Any]:
    """The cassette's first line: what it was recorded with (no timestamps: R6)."""
    return {"schemaVersion": 1, "format": "cassette/v1", "type": "header",
            "suiteId": ctx.suite.id, "suiteVersion": ctx.suite.version, "taskId": task.id,
            "harnessVersion": HARNESS_VERSION, "configHash": ctx.config.config_hash("record"),
            "provider": ctx.config.data["provider"]["name"], "model": ctx.config.data["provider"]["model"],
            "policy": effective_policy(ctx.config, task)}
