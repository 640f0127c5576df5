"""One run of a command agent (``agent.kind: command``) through a per-run gateway.

Per run: a :class:`~lab.gateway.Gateway` whose upstream depends on the mode
(live: the provider, the real key added on the way out; record: the same,
every call kept for the task's cassette; replay: the cassette, never a
provider; ``provider=scripted``: the task's agent script, no network), the
agent started in the task copy with a fresh ``HOME``, ``TZ=UTC``, stdin
closed, the gateway's base URL and a per-run token (never the real key).
A budget exceeded, a replay divergence or a provider fault that persisted
past the gateway's retries ends the agent's process group at once; the wall
budget ends it too. Then the verifiers run as for the built-in agent, unless
the gateway's account makes the run an infrastructure error
(:mod:`lab.execute.gateway_verdict`).

Cassettes of command agents: :mod:`lab.execute.agent_cassettes`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from lab.agents.command import CommandPreset, agent_prefix, placeholder_values, render, resolve_program
from lab.errors import CassetteError, ConfigError
from lab.execute.agent_cassettes import CassetteHooks, agent_cassette_path, write_agent_cassette
from lab.suites.load import Task

WALL_SLACK_S = 5.0
PROMPT_FILE = "prompt.md"
SOCKET_NAME = "gateway.sock"
INSIDE_RUN_DIR = "/run/lab"
SANDBOX_HOME = "/home/lab"
SANDBOX_PYTHON = "/usr/bin/python3"
RELAY_PORT = 43117
RELAY_URL = f"http://127.0.0.1:{RELAY_PORT}/v1"
RELAY_SCRIPT = (
    "mkfifo /tmp/.lab-relay && "
    f"{{ {SANDBOX_PYTHON} -I -S {INSIDE_RUN_DIR}/relay.py 127.0.0.1:{RELAY_PORT} {INSIDE_RUN_DIR}/{SOCKET_NAME}"
    " >/tmp/.lab-relay & } && read -r ready </tmp/.lab-relay && exec \"$@\"")
"""Inside a sandbox (fresh network namespace, so the port is free): start the relay, read its
``ready`` line (no polling), then replace the shell with the agent."""


def sandbox_backend(ctx: Any) -> Any:
    """The sandbox backend command agents run in: the eval's, else ``none`` (the host)."""
    in_force = getattr(ctx, "sandbox_in_force", None)
    if in_force is not None:
        return in_force().backend
    from lab.sandbox.none import NoneBackend

    return NoneBackend()


def agent_script_path(suite_dir: Path, agent: str, task_id: str) -> Path:
    """The scripted provider's script for a command agent: ``<suite>/scripts/agents/<agent>/<task>.json``."""
    return suite_dir / "scripts" / "agents" / agent / f"{task_id}.json"


def run_command_agent(ctx: Any, task: Task, workspace: Path, baseline: dict[str, str],
                      record: dict[str, Any], hooks: CassetteHooks) -> None:
    """Run the configured command agent on ``task`` in ``workspace`` and fill ``record``.

    Raises:
        LabError: infrastructure (cassette, script, gateway, agent start);
            the caller records it as ``status: error``.
    """
    from lab.gateway import Gateway, GatewayBudget, RetryPolicy, new_token
    from lab.replay.normalise import RequestNormaliser, task_rules

    preset = CommandPreset.from_config(ctx.config.data["agent"])
    backend = sandbox_backend(ctx)
    sandboxed = backend.name != "none"
    run_dir = _make_run_dir(ctx)
    try:
        # Per-run paths (the task copy, the run's HOME and prompt file) read the same in every run.
        per_run = (str(workspace), str(workspace.resolve()), str(backend.inside_path(workspace)),
                   str(run_dir), str(run_dir.resolve()))
        base = RequestNormaliser(rules=task_rules([{"pattern": p, "replace": r} for p, r in task.replay_normalize]),
                                 workspace=per_run, redact=_request_scrubber(ctx))
        calls: list[Any] = []
        upstream = FirstCallClock(_upstream(ctx, task, preset, preset.normaliser(base), calls, record, hooks))
        budget = GatewayBudget(max_turns=task.budget.get("maxTurns"), max_tokens=task.budget.get("maxTokens"),
                               max_wall_ms=task.budget.get("maxWallMs"))
        token = new_token()
        holder: dict[str, Any] = {}
        retry = RetryPolicy(max_retries=int(ctx.config.data["provider"].get("max_retries", 2)),
                            wait=ctx.config.mode != "replay")
        gateway = Gateway(upstream, token, budget, on_halt=lambda halt: _on_halt(holder, halt),
                          models=[ctx.config.data["provider"]["model"]], tcp=not sandboxed,
                          socket_path=run_dir / SOCKET_NAME if sandboxed else None, retry=retry)
        try:
            address = gateway.start()
            base_url = RELAY_URL if sandboxed else address.base_url or ""
            status = _launch_and_wait(ctx, task, preset, backend, workspace, run_dir, base_url, token, holder)
        finally:
            gateway.stop()
    finally:
        _remove_run_dir(run_dir, record)
    _finish(ctx, task, preset, backend, workspace, baseline, record, gateway, status, calls)
    overridden = getattr(getattr(upstream, "inner", None), "overridden", None) or \
        getattr(getattr(getattr(upstream, "inner", None), "inner", None), "overridden", None)
    if overridden:
        asked = ", ".join(f"{name!r} ({n} call(s))" for name, n in sorted(overridden.items()))
        record.setdefault("warnings", []).append(
            f"agent {preset.name} asked for model {asked}; the gateway sent provider.model "
            f"{ctx.config.data['provider']['model']!r} instead (the model measured)")
    started = holder.get("started")
    record["executor"]["startupMs"] = None if upstream.first is None or started is None \
        else max(0, int((upstream.first - started) * 1000))
    if ctx.config.mode == "record" and record["status"] != "error":
        write_agent_cassette(ctx, task, preset, calls, hooks, record)


def _request_scrubber(ctx: Any) -> Any:
    """Secrets and home/temp paths out of every normalised request, as for the built-in agent."""
    from lab.execute.recording import credential_env
    from lab.export.secrets import SecretScanner
    from lab.replay.scrub import path_bases_of, request_scrubber

    return request_scrubber(SecretScanner(env=ctx.env, credential_env=credential_env(ctx)), path_bases_of(ctx.env))


class FirstCallClock:
    """An upstream wrapper noting when the agent's first model call arrived (monotonic seconds)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.first: float | None = None

    async def send(self, request: Any) -> Any:
        if self.first is None:
            self.first = time.monotonic()
        return await self.inner.send(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _make_run_dir(ctx: Any) -> Path:
    """A fresh directory ``agent-*`` for the run's HOME, prompt file and gateway socket.

    It sits in the lab process's run root (``<tmp>/lab-runs-<uid>/<pid>-<random>``,
    :class:`lab.sandbox.reaper.RunRoot`, mode 0711: reachable by the sandbox's
    host user, shown inside at ``/run/lab``), beside the task copies, so a lab
    killed with SIGKILL leaves it only until the next command's reaper
    removes the whole run root. Without a run root (a bare context), the
    system temp dir.
    """
    in_force = getattr(ctx, "sandbox_in_force", None)
    parent = in_force().run_root if in_force is not None else None
    path = Path(tempfile.mkdtemp(prefix="agent-", dir=parent))
    os.chmod(path, 0o711)
    return path


def _remove_run_dir(run_dir: Path, record: dict[str, Any]) -> None:
    """Remove the run's ``agent-*`` directory (any depth, links never followed); a failure is a
    warning on the record (the run root's removal or the next reaper tries again), never the run's end."""
    from lab.sandbox.walk import remove_tree

    try:
        remove_tree(run_dir)
    except OSError as exc:
        record.setdefault("warnings", []).append(
            f"cannot remove the agent's directory {exc.filename or run_dir}: {exc.strerror or exc}")


def _on_halt(holder: dict[str, Any], halt: Any) -> None:
    process = holder.get("process")
    holder["halt"] = halt
    if process is not None:
        process.end(halt.reason)


def _launch_and_wait(ctx: Any, task: Task, preset: CommandPreset, backend: Any, workspace: Path,
                     run_dir: Path, base_url: str, token: str, holder: dict[str, Any]) -> Any:
    from lab.execute.agent_process import AgentProcess
    from lab.sandbox.base import spawn_args

    launch = _launch(ctx, task, preset, backend, workspace, run_dir, base_url, token)
    with spawn_args(launch) as (argv, fds):
        process = AgentProcess(argv, env=launch.env, cwd=launch.cwd, grace_ms=preset.grace_ms, pass_fds=fds)
    holder["process"] = process
    holder["started"] = process.started
    if "halt" in holder:  # halted before the process existed
        process.end(holder["halt"].reason)
    cancel_watch = _watch_cancel(ctx, process)
    wall = task.budget.get("maxWallMs")
    status = process.wait(None if wall is None else wall / 1000 + WALL_SLACK_S)
    cancel_watch.set()
    return status


def _launch(ctx: Any, task: Task, preset: CommandPreset, backend: Any, workspace: Path, run_dir: Path,
            base_url: str, token: str) -> Any:
    """The sandbox ``Launch`` of the agent: argv and env rendered, hygiene applied."""
    from lab.agents.command import RESERVED_ENV
    from lab.paths import data_dir

    sandboxed = backend.name != "none"
    view = Path(INSIDE_RUN_DIR) if sandboxed else run_dir
    home = Path(SANDBOX_HOME) if sandboxed else run_dir / "home"
    if not sandboxed:
        home.mkdir()
    (run_dir / PROMPT_FILE).write_text(task.prompt, encoding="utf-8")
    values = placeholder_values(preset, prompt=task.prompt, prompt_file=str(view / PROMPT_FILE),
                                model=ctx.config.data["provider"]["model"], base_url=base_url, home=str(home))
    env: dict[str, str] = {}
    binds: list[Any] = []
    if sandboxed and preset.manager == "lab":
        values["python"] = SANDBOX_PYTHON
        env["PYTHONPATH"], binds = _lab_packages()
    argv = render(preset.argv, values)
    program = resolve_program(preset, data_dir(ctx.env), argv[0])
    if program is None:
        raise ConfigError(f"agent {preset.name}: program {argv[0]!r} not found "
                          f"(run: lab agents install {preset.name})")
    env.update(zip((k for k, _ in preset.env), render([v for _, v in preset.env], values)))
    env.update(dict.fromkeys(RESERVED_ENV[:2], base_url), OPENAI_API_KEY=token, HOME=str(home), TZ="UTC",
               XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"))
    if not sandboxed:
        return backend.wrap([program, *argv[1:]], workspace=workspace, env=env)
    return _sandboxed_launch(backend, preset, workspace, run_dir, [program, *argv[1:]], env, binds)


def _lab_packages() -> tuple[str, list[Any]]:
    """PYTHONPATH and binds that give the sandbox's interpreter the lab's pure-Python packages."""
    import sysconfig

    from lab.sandbox.base import Bind

    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    from lab.agents.command import AGENTS_DIR

    return str(purelib), [Bind(purelib, PurePosixPath(purelib)), Bind(AGENTS_DIR, PurePosixPath(AGENTS_DIR))]


def _sandboxed_launch(backend: Any, preset: CommandPreset, workspace: Path, run_dir: Path, argv: list[str],
                      env: dict[str, str], binds: list[Any]) -> Any:
    """Inside: the relay on 127.0.0.1 (to the gateway's socket), then the agent (``exec``)."""
    from lab.paths import data_dir
    from lab.sandbox.base import Bind

    relay = Path(__file__).resolve().parents[1] / "gateway" / "relay.py"
    shutil.copyfile(relay, run_dir / "relay.py")
    backend.prepare(workspace)
    backend.prepare(run_dir)
    prefix = agent_prefix(data_dir(), preset.name).resolve()
    if preset.manager != "lab" and prefix.is_dir():
        binds.append(Bind(prefix, PurePosixPath(prefix)))
    binds.append(Bind(run_dir, PurePosixPath(INSIDE_RUN_DIR)))
    return backend.wrap(["/bin/sh", "-c", RELAY_SCRIPT, "agent", *argv], workspace=workspace, env=env,
                        binds=binds)


def _watch_cancel(ctx: Any, process: Any) -> Any:
    """End the agent when the eval is cancelled; returns an event that stops the watcher."""
    import threading

    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if ctx.cancel.wait(0.2):  # Event.wait: wakes at once on a cancel
                process.end("cancelled")
                return

    threading.Thread(target=watch, name="lab-agent-cancel", daemon=True).start()
    return done


def _upstream(ctx: Any, task: Task, preset: CommandPreset, normalise: Any, calls: list[Any],
              record: dict[str, Any], hooks: CassetteHooks) -> Any:
    from lab.gateway import LiveUpstream, RecordingUpstream, ReplayUpstream
    from lab.replay.matching import Matcher, Recording

    mode = ctx.config.mode
    if mode == "replay":
        from lab.replay.cassette import read_cassette

        path = agent_cassette_path(ctx.cassette_dir, ctx.suite.id, preset.name, task.id)
        header, recorded = read_cassette(path)
        recorded_api = (header.get("agent") or {}).get("api")
        if recorded_api and recorded_api != preset.api:
            raise CassetteError(f"{path}: recorded with agent.api={recorded_api}; this run uses "
                                f"agent.api={preset.api} (record again, or pass agent.api={recorded_api})")
        record["warnings"] = hooks.preconditions(ctx, task, header, str(path))
        recordings = [Recording(c["index"], c.get("api", "chat"), c["request"], c["exchange"], c["fingerprint"])
                      for c in recorded]
        matcher = Matcher(recordings, source=str(path))
        record["_matcher"] = matcher
        return ReplayUpstream(matcher, normalise)
    provider = ctx.config.data["provider"]
    if provider["name"] == "scripted":
        from lab.gateway.scripted import ScriptedUpstream
        from lab.providers.scripted import load_script

        script_path = agent_script_path(ctx.suite.path, preset.name, task.id)
        inner: Any = ScriptedUpstream(load_script(script_path), source=str(script_path))
    else:
        key_env = provider.get("api_key_env") or ""
        inner = LiveUpstream(provider.get("base_url") or "https://api.openai.com/v1",
                             ctx.env.get(key_env, ""), timeout_s=float(provider["timeout_s"]),
                             extra_headers=dict(provider.get("headers") or {}), model=str(provider["model"]))
        if provider.get("max_response_bytes"):
            inner.max_response_bytes = int(provider["max_response_bytes"])
    if mode == "record":
        return RecordingUpstream(inner, normalise, calls.append)
    return inner


def _finish(ctx: Any, task: Task, preset: CommandPreset, backend: Any, workspace: Path,
            baseline: dict[str, str], record: dict[str, Any], gateway: Any, status: Any, calls: list[Any]) -> None:
    from lab.execute.gateway_verdict import gateway_error, gateway_incidents
    from lab.execute.verifiers import run_verifiers, score

    stats = gateway.stats
    halt = gateway.halt
    matcher = record.pop("_matcher", None)
    claimed = preset.claims_success(status.exit_code, status.stdout_tail)
    incidents = gateway_incidents(stats)
    record.update(
        agent={"name": preset.name, "version": preset.version, "api": preset.api},
        executor=status.to_json(), gateway=stats.to_json(), turns=stats.calls,
        claim="success" if claimed else ("none" if status.ended_by_lab else "gave_up"),
        usage=stats.usage.to_json() | {"cachedPartial": stats.cached_partial} if stats.usage else None,
        incidents=incidents, retries=stats.retries)
    error = _divergence(halt, matcher)
    if error is not None:
        record.update(status="error", error=error,
                      divergence={k: error.get(k) for k in ("callIndex", "field", "recorded", "actual")})
        return
    error = gateway_error(stats, halt, preset.name)
    if error is not None:  # an outage or a setup error says nothing about the agent: not a result
        record.update(status="error", error=error, stopReason="error")
        return
    _set_aside(workspace, preset.ignore, record)
    # As for the built-in agent: command verifiers in the eval's sandbox, over its base environment.
    results = run_verifiers(list(task.verifiers), workspace=workspace, baseline=baseline, events=[],
                            env={}, cancel=ctx.cancel, sandbox=backend)
    record["verifiers"] = [r.to_json() for r in results]
    record["score"] = score(results)
    verdicts = [r.status for r in results]
    if "error" in verdicts:
        bad = next(r for r in results if r.status == "error")
        record.update(status="error", error={"kind": "verifier", "message": f"verifier {bad.id}: {bad.detail}"})
    elif halt is not None or status.ended_by_lab == "maxWallMs":
        reason = halt.reason if halt is not None else "maxWallMs"
        record.update(status="budget_exceeded", budgetExceeded=reason, stopReason="budget_exceeded")
    elif status.ended_by_lab == "cancelled":
        record.update(status="fail", stopReason="cancelled")
    else:
        record.update(status="pass" if all(v == "pass" for v in verdicts) else "fail",
                      stopReason="answered" if status.exit_code == 0 else "error")


def _divergence(halt: Any, matcher: Any) -> dict[str, Any] | None:
    from lab.errors import CassetteMiss

    miss = halt.divergence if halt is not None and halt.reason == "replay_divergence" else None
    if miss is None and matcher is not None:
        try:
            matcher.finish()
        except CassetteMiss as exc:
            miss = exc
    if miss is None:
        return None
    return {"kind": "replay_divergence", "message": str(miss), "callIndex": getattr(miss, "call_index", None),
            "field": getattr(miss, "field", None), "recorded": getattr(miss, "recorded", None),
            "actual": getattr(miss, "actual", None)}


def _set_aside(workspace: Path, ignore: tuple[str, ...], record: dict[str, Any]) -> None:
    """Remove the preset's ignored files from the task copy before the verifiers look, never through
    a link the agent planted (:func:`lab.agents.ignore.set_aside`); what could not be done is a warning."""
    from lab.agents.ignore import set_aside

    warnings = set_aside(workspace, ignore)
    if warnings:
        record.setdefault("warnings", []).extend(warnings)
