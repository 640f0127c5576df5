"""Cassettes of command agents: where they live, the API they were recorded with, writing one.

They live at ``<cassette dir>/<suite>/agents/<agent>/<task>.jsonl``
(``cassette/v1``, calls with ``api``), apart from the built-in agent's; the
header's ``agent`` block names the agent, its version and its ``api``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from lab.agents.command import CommandPreset
from lab.suites.load import Task


class CassetteHooks(NamedTuple):
    """The cassette steps shared with the built-in agent's run (``lab.execute.run``)."""

    header: Callable[[Any, Task], dict[str, Any]]
    preconditions: Callable[[Any, Task, dict[str, Any], str], list[str]]
    recorded_at: Callable[[Path, dict[str, Any], list[dict[str, Any]]], str]


def agent_cassette_path(cassette_dir: Path, suite_id: str, agent: str, task_id: str) -> Path:
    """``<cassette dir>/<suite>/agents/<agent>/<task>.jsonl``."""
    return cassette_dir / suite_id / "agents" / agent / f"{task_id}.jsonl"


def recorded_api_mismatch(cassette_dir: Path, suite_id: str, agent: str, api: str,
                          task_ids: list[str]) -> str | None:
    """One line when cassettes of ``task_ids`` were recorded with another ``agent.api``, else None.

    Reads only each cassette's first line (the header); a missing or
    unreadable cassette is left to the run, which names it.
    """
    from lab.files import loads_json, open_text

    recorded: dict[str, list[str]] = {}
    for task_id in task_ids:
        try:
            with open_text(agent_cassette_path(cassette_dir, suite_id, agent, task_id)) as f:
                header = loads_json(f.readline())
        except (OSError, ValueError):
            continue
        other = (header.get("agent") or {}).get("api") if isinstance(header, dict) else None
        if isinstance(other, str) and other and other != api:
            recorded.setdefault(other, []).append(task_id)
    if not recorded:
        return None
    where = agent_cassette_path(cassette_dir, suite_id, agent, "*").parent
    count = sum(len(ids) for ids in recorded.values())
    apis = ", ".join(f"agent.api={other} ({_listed(ids)})" for other, ids in sorted(recorded.items()))
    fix = f"record again, or pass agent.api={next(iter(recorded))}" if len(recorded) == 1 else "record again"
    return (f"replay: {count} of {len(task_ids)} cassettes of agent {agent} in {where} were recorded with "
            f"{apis}; this run uses agent.api={api} ({fix})")


def _listed(ids: list[str], most: int = 3) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def write_agent_cassette(ctx: Any, task: Task, preset: CommandPreset, calls: list[Any],
                         hooks: CassetteHooks, record: dict[str, Any]) -> None:
    """Write the run's recorded calls as the task's cassette (atomic), scrubbed as the built-in
    agent's is (:func:`lab.replay.scrub.redact_cassette`): every secret replaced by its marker,
    a key split across streamed deltas included, and noted in ``record["redactions"]``.

    Raises:
        CassetteError: over the size limits, or a secret the redaction left (never expected).
    """
    from lab.replay.cassette import dump_cassette, write_cassette
    from lab.replay.scrub import check_secrets, redact_cassette

    path = agent_cassette_path(ctx.cassette_dir, ctx.suite.id, preset.name, task.id)
    header = hooks.header(ctx, task)
    header["agent"] = {"name": preset.name, "version": preset.version, "api": preset.api}
    lines = [{"schemaVersion": 1, "type": "call", "index": c.index, "purpose": "main", "api": c.api,
              "fingerprint": c.fingerprint, "request": c.request, "exchange": c.exchange}
             for c in sorted(calls, key=lambda c: c.index)]
    key_env = [ctx.config.data["provider"].get("api_key_env") or ""]
    header, lines, replaced = redact_cassette(header, lines, env=ctx.env, credential_env=key_env)
    check_secrets(header, lines, source=str(path), env=ctx.env, credential_env=key_env)  # a last guard (R4)
    if replaced:
        record["redactions"] = [*(record.get("redactions") or []), *({"file": "cassette", **hit} for hit in replaced)]
    header["recordedAt"] = hooks.recorded_at(path, header, lines)
    path.parent.mkdir(parents=True, exist_ok=True)  # runs in other threads (jobs=N) make it at the same time
    write_cassette(path, dump_cassette(header, lines))
