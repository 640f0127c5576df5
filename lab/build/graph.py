"""The doit graph of one eval: every run record and report is a file target (SPEC X4).

``prepare`` composes the configuration once, loads the suite and plans the
runs; ``eval_tasks`` yields one task per run record, the report and the
closing summary. ``dodo.py`` exposes the creators (see
:mod:`lab.build.commands`); ``lab run`` drives the same graph through doit's
API, so both share results on disk. Each run record is a
target keyed by its inputs (config hash, harness digest, suite digest, task,
base seed, repetition, and in replay the cassette file): an unchanged input
set is up to date and never executed again.

Every ``key=value`` argument doit receives is forwarded to Hydra as an
override, so a typo (``kk=5``) is an error naming the key, not ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import paths
from lab.build.actions import RecordCurrent, RecordsUnchanged, report_action, report_header, run_action, summary_action
from lab.build.cmdline import argv_words, building, cmdline_overrides
from lab.build.creators import creator, usage_error_tasks
from lab.build.inputs import run_inputs, run_name, write_config
from lab.errors import ConfigError, LabError


@dataclass
class Prepared:
    """A composed config, loaded suite and planned runs for one command."""

    ctx: Any
    specs: list[Any]
    store: Path
    run_id: str
    k: int
    basename: str = "eval"
    endpoint: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each planned run's inputs by run name, computed once (see :func:`run_inputs`)."""
    index: Any = None
    paths: dict[Any, Path] = field(default_factory=dict)
    cassettes: dict[str, str | None] = field(default_factory=dict)
    """The sha256 of each task's cassette this command replays, by task id (k runs share one)."""
    agent: dict[str, Any] | None = None
    """A command agent's identity (:func:`lab.agents.identity.agent_identity`), taken once per command."""

    @property
    def report_dir(self) -> Path:
        return self.store / "reports" / self.run_id

    def record_path(self, spec: Any) -> Path:
        key = (self.store, spec)
        if key not in self.paths:  # one Path made from a string: joins cost more, 3 per run
            self.paths[key] = Path(f"{self.store}/runs/{spec.task_id}/{spec.name}.json")
        return self.paths[key]

    def record_index(self) -> Any:
        """The :class:`~lab.build.records.RecordIndex` of this command's run store (made on first use)."""
        if self.index is None or self.index.store != self.store:
            from lab.build.records import RecordIndex

            self.index = RecordIndex(self.store)
        return self.index


def prepare(overrides: list[str], *, mode: str | None = None, basename: str = "eval",
            check_provider: bool = True) -> Prepared:
    """Compose the config once, load the suite, check grants and plan the runs.

    With ``check_provider`` (and ``preflight=true``, not in replay), the
    provider's key and endpoint are checked too (:func:`provider_preflight`).

    Raises:
        LabError: ConfigError or SuiteError naming the key, task and field.
    """
    from lab.config.cache import compose_cached
    from lab.config.identity import endpoint_identity, endpoint_key, store_key
    from lab.execute.context import EvalContext
    from lab.execute.events import EventLog, stderr_if
    from lab.execute.plan import check_grants, plan_runs, run_id, select_tasks
    from lab.suites.source import cassette_root, resolve_suite

    if mode is not None:
        overrides = [*overrides, f"mode={mode}"]
    config = compose_cached(overrides)  # what an earlier command composed, when nothing changed
    out = config.data["out"]
    if out:
        from lab.files import unwritable_dir_reason

        reason = unwritable_dir_reason(Path(out))
        if reason:
            raise ConfigError(f"config: out: cannot write the report to {out}: {reason}")
    suite = resolve_suite(config, cached=True)
    tasks = select_tasks(suite, list(config.data["tasks"]))
    if config.mode == "replay":
        config = _recorded_config(overrides, config, suite, [t.id for t in tasks])
    check_grants(tasks, config, suite.id)
    choice = _sandbox(config, suite)
    cassettes = cassette_root(suite.path, config.data["cassette_dir"])
    agent = config.data["agent"]
    if agent.get("kind") == "command":
        from lab.agents.command import CommandPreset, check_installed

        check_installed(CommandPreset.from_config(agent), paths.data_dir())
        if config.mode == "replay" and not any((cassettes / suite.id / "agents" / agent["name"]).glob("*.jsonl")):
            raise ConfigError(f"replay: no cassettes for agent {agent['name']} on suite {suite.id} in "
                              f"{cassettes / suite.id / 'agents' / agent['name']} (record them first)")
        if config.mode == "replay":  # said once here, not once per run
            from lab.execute.agent_cassettes import recorded_api_mismatch

            mismatch = recorded_api_mismatch(cassettes, suite.id, agent["name"], agent["api"], [t.id for t in tasks])
            if mismatch is not None:
                raise ConfigError(mismatch)
    elif config.mode == "replay" and not any((cassettes / suite.id).glob("*.jsonl")):
        agents = sorted(d.name for d in (cassettes / suite.id / "agents").glob("*") if any(d.glob("*.jsonl")))
        hint = (f"; that dir holds recordings of the command agent{'s' * (len(agents) > 1)} {', '.join(agents)}: "
                f"replay them with agent={agents[0] if len(agents) == 1 else '<one of them>'}" if agents else "")
        raise ConfigError(f"replay: no cassettes for suite {suite.id} in {cassettes / suite.id} "
                          f"(record them with `doit record suite={suite.id}`, or set cassette_dir=){hint}")
    if config.mode != "replay" and config.data["provider"]["name"] == "scripted":  # said once, not per run
        from lab.suites.scripts import missing_scripts

        missing = missing_scripts(suite.path, [t.id for t in tasks],
                                  agent["name"] if agent.get("kind") == "command" else None)
        if missing:
            raise ConfigError(missing)
    if check_provider:
        provider_preflight(config)
    k = 1 if config.mode == "record" else config.k
    endpoint = endpoint_identity(config.data["provider"], config.mode)
    key = store_key(suite.version, config.config_hash(), endpoint_key(endpoint))
    store = paths.data_dir() / suite.id / key
    subset = [t.id for t in tasks] if len(tasks) < len(suite.tasks) else None
    rid = run_id(suite.id, key, k, config.seed, subset)
    events = EventLog({"suiteId": suite.id, "configHash": config.config_hash(), "runId": rid},
                      path=store / "history.jsonl", stream=stderr_if(config.data["progress"]))
    ctx = EvalContext(config=config, suite=suite, cassette_dir=cassettes, work_dir=store / "work",
                      events=events, sandbox_choice=choice)
    return Prepared(ctx=ctx, specs=plan_runs([t.id for t in tasks], k, config.seed), store=store,
                    run_id=rid, k=k, basename=basename, endpoint=endpoint)


def _recorded_config(overrides: list[str], config: Any, suite: Any, task_ids: list[str]) -> Any:
    """A replay's configuration with the provider and model its cassettes were recorded with,
    unless ``provider=``/``provider.model=`` were given (lab.replay.recorded); says so on stderr
    when that changes what the configuration composed to."""
    from lab.config.cache import compose_cached
    from lab.replay.recorded import adopted_overrides, recorded_choice
    from lab.suites.source import cassette_root

    cassettes = cassette_root(suite.path, config.data["cassette_dir"]) / suite.id
    agent = config.data["agent"]
    if agent.get("kind") == "command":
        cassettes = cassettes / "agents" / agent["name"]
    provider = config.data["provider"]
    adopted, line = adopted_overrides(recorded_choice(cassettes, task_ids, who="replay"), overrides,
                                      (provider["name"], provider["model"]), cassettes)
    if line:
        print(line, file=sys.stderr, flush=True)
    return compose_cached([*adopted, *overrides]) if adopted else config


def _sandbox(config: Any, suite: Any, choice: Any = None) -> Any:
    """The backend ``sandbox=`` gives (a ``SandboxChoice``; the sandbox opens before the first run
    this command executes), or ``choice``; refuse unsandboxed third-party commands (trust_local).
    With an executor other than ``local`` the choice is made for the workers (``cluster_choice``)."""
    from lab.execute.sandboxing import check_trust, choose_sandbox, cluster_choice
    from lab.suites.source import is_third_party

    if choice is None:
        requested = config.data["sandbox"]["name"]
        on_cluster = (config.data.get("executor") or {}).get("name", "local") != "local"
        choice = cluster_choice(requested) if on_cluster else choose_sandbox(requested)
    check_trust(choice, third_party=is_third_party(suite.path),
                trust_local=bool(config.data["trust_local"]), where=f"suite {suite.id} ({suite.path})")
    agent = config.data["agent"]
    if agent.get("kind") == "command":  # an external program, like a third-party suite's commands
        check_trust(choice, third_party=True, trust_local=bool(config.data["trust_local"]),
                    where=f"agent {agent['name']}", what="a command agent (a program the lab does not control)")
    return choice


def provider_preflight(config: Any) -> None:
    """Check the provider can answer before the first run (lab.providers.preflight).

    Skipped in replay, with ``preflight=false``, and for doit commands that
    only read the graph (``clean``, ``forget``, ``list``).

    Raises:
        ConfigError: the API key is not set. ProviderError: the endpoint does not answer.
    """
    if config.mode != "replay" and config.data["preflight"] and building():
        import os

        from lab.providers.preflight import preflight

        preflight(config.data["provider"], os.environ)


def task_eval() -> Iterator[dict[str, Any]]:
    """Run a suite k times per task and build its report (doit eval suite=… k=… mode=…)."""
    yield from creator("eval", lambda: prepare(cmdline_overrides()), eval_tasks)


def task_record() -> Iterator[dict[str, Any]]:
    """Record cassettes for a suite with the configured provider (doit record suite=…)."""
    yield from creator("record", lambda: prepare(cmdline_overrides(), mode="record", basename="record"),
                       lambda prep: eval_tasks(prep, always=True))


def eval_tasks(prep: Prepared, *, always: bool = False, gate: bool = True) -> Iterator[dict[str, Any]]:
    """The doit tasks of one eval: one per run record, then the report, then the summary.

    With ``gate=False`` the summary only prints (``ci`` gates all suites at the end).
    """
    try:
        if building():
            from lab.build.baseline import check_baseline

            check_baseline(prep)  # before any run: a changed suite never overwrites its version's results
            start_eval(prep)
        elif argv_words()[:1] == ["clean"]:  # executes no task: a usage-error task would not show
            from lab.build.claims import refuse_clean_while_running

            try:
                refuse_clean_while_running(prep.store, prep.run_id)
            except LabError as exc:
                print(exc, file=sys.stderr, flush=True)
                raise SystemExit(1) from None
        elif argv_words()[:1] == ["forget"]:
            from lab.build.records import forget_records

            forget_records(prep, argv_words()[1:])
        runs = [run_task(prep, spec, always=always) for spec in prep.specs]
        if building() and any(run["uptodate"] != [True] for run in runs) and _sandbox_reprobed(prep):
            runs = [run_task(prep, spec, always=always) for spec in prep.specs]  # under the backend that holds
    except LabError as exc:
        yield from usage_error_tasks(prep.basename, str(exc), progress=bool(prep.ctx.config.data["progress"]))
        return
    except OSError as exc:  # the data dir filled up or turned read-only since doit_config checked it
        from lab.build.depdb import DISK_FAULT_REPORTED, describe_os_error

        DISK_FAULT_REPORTED.append(describe_os_error(exc, paths.data_dir()))
        yield from usage_error_tasks(prep.basename, DISK_FAULT_REPORTED[-1])
        return
    yield from runs
    yield report_task(prep)
    from lab.stamps import shared_digests

    shared_digests().save()  # the harness and cassette digests this command computed
    yield {"name": f"{prep.run_id}.summary", "actions": [(summary_action, [prep, prep.report_dir, gate])],
           "task_dep": [f"{prep.basename}:{prep.run_id}.report"], "uptodate": [False], "verbosity": 2}


def _sandbox_reprobed(prep: Prepared) -> bool:
    """Before a run executes under a backend remembered from an earlier probe, probe now: when the
    host changed (the memo is stale), plan the runs again under the backend that holds instead of
    stopping. Returns whether the backend changed (its trust check is made again then).

    Raises:
        LabError: ``sandbox=bwrap`` that fails now; an unsandboxed third-party suite without
            ``trust_local``.
    """
    ctx = prep.ctx
    choice = ctx.sandbox_choice
    if choice is None or not choice.remembered or ctx.sandbox is not None:
        return False
    from lab.execute.sandboxing import confirm_choice

    ctx.sandbox, confirmed = confirm_choice(choice)
    if confirmed is choice:
        return False
    ctx.sandbox_choice = _sandbox(ctx.config, ctx.suite, confirmed)
    prep.inputs.clear()
    return True


def start_eval(prep: Prepared, *, notes: bool = True) -> None:
    """Create the run store, save the config, announce the eval, route Ctrl-C to it.

    ``notes=False`` leaves out the banner's notes (a variants command prints them once).
    """
    from lab.build.baseline import remember_digest
    from lab.build.claims import eval_lock, hold_eval
    from lab.execute import interrupt

    ctx = prep.ctx
    prep.store.mkdir(parents=True, exist_ok=True)
    hold_eval(eval_lock(prep.store, prep.run_id))  # doit clean of this configuration refuses meanwhile
    write_config(prep)
    if ctx.config.mode != "record":
        remember_digest(prep)
    ctx.events.emit("eval_started", runs=len(prep.specs), k=prep.k, mode=ctx.config.mode)
    if not ctx.config.data["json"]:
        from lab.execute.progress import display

        display().print(eval_banner(prep, notes=notes))
    interrupt.install(ctx.cancel, ctx.idle, ctx.active_elsewhere,
                      lambda signum: ctx.events.emit("run_cancelled", signal=signal_name(signum)))


def eval_banner(prep: Prepared, *, notes: bool = True) -> str:
    """The first lines of an eval: what runs, against what, and where results land.

    A variant's banner names it in brackets; ``notes=False`` keeps only the first line.
    """
    from lab.report.notes import REPLAY_NOTE, SCRIPTED_NOTE

    ctx = prep.ctx
    provider = ctx.config.data["provider"]
    variant = f" [{ctx.label}]" if ctx.label else ""
    agent = ctx.config.data["agent"]
    named = f"agent {agent['name']} {agent['version']} · " if agent.get("kind") == "command" else ""
    lines = [f"{prep.basename}{variant} {ctx.suite.id} {ctx.suite.version} · {ctx.config.mode} · "
             f"{provider['name']}/{provider['model']} · {named}k={prep.k} · {len(prep.specs)} run(s) · "
             f"results in {paths.data_dir()}"]
    if notes and ctx.config.mode == "replay":
        lines.append(REPLAY_NOTE)
    elif notes and provider["name"] == "scripted":
        lines.append(SCRIPTED_NOTE)
    return "\n".join(lines)


def signal_name(signum: int) -> str:
    import signal

    return signal.Signals(signum).name


def run_task(prep: Prepared, spec: Any, *, always: bool = False) -> dict[str, Any]:
    """The doit task of one run: its record is a target keyed by its inputs (X4).

    The inputs are saved inside the record, and the record is up to date when
    it exists with the same inputs. This holds whatever happened to doit's own
    database (a run interrupted after its record was written is not repeated).
    """
    target = prep.record_path(spec)
    force = always or prep.ctx.config.data["force"]
    inputs = run_inputs(prep, spec)
    return {"name": run_name(prep, spec), "actions": [(run_action, [prep.ctx, spec, target, inputs])],
            "targets": [str(target)], "clean": True,
            "uptodate": [False] if force else [_record_current(prep, target, inputs)],
            "meta": {"lab": "run", "events": prep.ctx.events, "group": prep.run_id,
                     "ident": {"taskId": spec.task_id, "repetition": spec.repetition, "seed": spec.seed}},
            "verbosity": 2}


def _record_current(prep: Prepared, target: Path, inputs: dict[str, Any]) -> Any:
    """The run's up-to-date check: decided now when this command builds (the record is this run's
    own target, and its action checks again under the run's claim), saving doit a signature
    inspection and a database read per run; left to doit for ``doit list --status`` and the like."""
    check = RecordCurrent(target, inputs, prep.record_index())
    return check(None, {}) if building() else check


def report_task(prep: Prepared) -> dict[str, Any]:
    """The report over every planned run's record (missing ones count as not run)."""
    records = [prep.record_path(spec) for spec in prep.specs]
    expected = [run_inputs(prep, spec) for spec in prep.specs]
    header = report_header(prep)
    return {"name": f"{prep.run_id}.report",
            "actions": [(report_action, [prep, records, prep.report_dir, header, expected])],
            "task_dep": [f"{prep.basename}:{run_name(prep, spec)}" for spec in prep.specs],
            "targets": [str(prep.report_dir / "report.json")],
            "clean": [(_remove_tree, [prep.report_dir])],
            "uptodate": [RecordsUnchanged(records, header, prep.record_index())], "verbosity": 2}


def _remove_tree(path: Path) -> None:
    """doit clean of a report: its whole directory (report.json, .md, .html, junit.xml, …)."""
    import shutil

    if path.is_dir():
        print(f"{path} removed")
        shutil.rmtree(path)
