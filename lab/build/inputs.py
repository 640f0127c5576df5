"""What a run depends on, and the configuration saved beside the runs (SPEC X4, C4).

A run's *inputs* (:func:`run_inputs`) key its record as a doit target: the
config hash, harness and suite digests, suite version, endpoint identity,
sandbox backend, task, base seed, repetition, a command agent's identity
(``agent``: preset, resolved executable, digest of its script or installed
package, reported version; :mod:`lab.agents.identity`), and in replay the cassette's
sha256 (from the data dir's digest cache: a cassette is read once per
version, not once per command). :func:`run_name` is the run's doit task
name; :func:`write_config` saves ``config.json`` in the run store.
"""

from __future__ import annotations

from typing import Any


def run_inputs(prep: Any, spec: Any) -> dict[str, Any]:
    """What a run's result depends on: config hash, harness and suite digests,
    suite version, endpoint identity, task, base seed, repetition, and in
    replay the cassette's sha256 (computed once per run and command)."""
    key = run_name(prep, spec)
    inputs: dict[str, dict[str, Any]] = prep.inputs
    if key not in inputs:
        inputs[key] = _compute_inputs(prep, spec)
    return inputs[key]


def _compute_inputs(prep: Any, spec: Any) -> dict[str, Any]:
    from lab.execute.plan import harness_digest
    from lab.stamps import shared_digests

    ctx = prep.ctx
    inputs: dict[str, Any] = {
        "configHash": ctx.config_hash, "harnessDigest": harness_digest(), "suiteDigest": ctx.suite.digest,
        "taskId": spec.task_id, "baseSeed": spec.base_seed, "repetition": spec.repetition,
        "suiteVersion": ctx.suite.version, "endpoint": prep.endpoint, "sandbox": ctx.sandbox_name()}
    agent = ctx.config.data["agent"]
    if agent.get("kind") == "command":  # the built-in agent's code is in the harness digest
        inputs["agent"] = command_agent_identity(prep)
    if ctx.config.mode == "replay":
        if spec.task_id not in prep.cassettes:  # k runs of a task replay one cassette
            prep.cassettes[spec.task_id] = shared_digests().digest(_cassette(ctx, spec.task_id))
        inputs["cassetteDigest"] = prep.cassettes[spec.task_id]
    return inputs


def command_agent_identity(prep: Any) -> dict[str, Any]:
    """The configured command agent's identity, taken once per command (see :mod:`lab.agents.identity`)."""
    if prep.agent is None:
        from lab import paths
        from lab.agents.command import CommandPreset
        from lab.agents.identity import agent_identity

        prep.agent = agent_identity(CommandPreset.from_config(prep.ctx.config.data["agent"]), paths.data_dir())
    identity: dict[str, Any] = prep.agent
    return identity


def _cassette(ctx: Any, task_id: str) -> Any:
    agent = ctx.config.data["agent"]
    if agent.get("kind") == "command":  # a command agent replays its own recording
        from lab.execute.agent_cassettes import agent_cassette_path

        return agent_cassette_path(ctx.cassette_dir, ctx.suite.id, agent["name"], task_id)
    from lab.replay.layout import cassette_path

    return cassette_path(ctx.cassette_dir, ctx.suite.id, task_id)


def run_name(prep: Any, spec: Any) -> str:
    return f"{prep.ctx.suite.id}.{prep.store.name}.{spec.task_id}.{spec.name}"


def write_config(prep: Any) -> None:
    """Save the configuration beside the runs (``config.json``), secrets redacted."""
    from lab.export.credentials import credential_values, is_credential_header
    from lab.files import dumps_json, read_bytes, write_atomic

    ctx = prep.ctx
    config = _public_config(ctx.config.data)
    headers = dict(config["provider"].get("headers") or {})
    for name in headers:  # credential headers are never written, whatever their value
        if is_credential_header(name):
            headers[name] = "<secret:credential-header>"
    config["provider"] = {**config["provider"], "headers": headers}
    doc = {"schemaVersion": 1, "configHash": ctx.config_hash, "variant": ctx.config.variant,
           "endpoint": prep.endpoint, "measured": ctx.config.measured_view(), "config": config}
    path = prep.store / "config.json"
    try:
        on_disk: bytes | None = read_bytes(path)  # a FIFO in its place is refused, not waited on
    except OSError:
        on_disk = None
    plain = dumps_json(doc)
    names = [config["provider"].get("api_key_env") or ""]  # as lab.execute.recording.credential_env
    credentials = credential_values(ctx.env, names).values()
    if on_disk == plain.encode("utf-8") and not any(_json_text(value) in plain for value in credentials):
        # Written earlier from this very document, which the scanner then left as it was; and it
        # holds no credential of this environment: nothing to redact, nothing to write.
        return
    from lab.export.secrets import SecretScanner

    data = dumps_json(SecretScanner(env=ctx.env, credential_env=names).redact(doc)[0]).encode("utf-8")
    if on_disk != data:
        write_atomic(path, data)


def _json_text(value: str) -> str:
    """``value`` as it appears inside a JSON string the lab writes (escaped, UTF-8 kept)."""
    import json

    return json.dumps(value, ensure_ascii=False)[1:-1]


def _public_config(data: dict[str, Any]) -> dict[str, Any]:
    """The config as saved beside the runs: no runtime knobs that vary per command."""
    return {k: v for k, v in data.items() if k not in {"progress", "json", "yes", "force", "overwrite", "out"}}
