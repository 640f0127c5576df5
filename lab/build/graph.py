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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lab import paths
from lab.build.actions import RecordCurrent, RecordsUnchanged, report_action, report_header, run_action, summary_action
from lab.errors import ConfigError, LabError

DOIT_COMMANDS = frozenset({"auto", "clean", "dumpdb", "forget", "help", "ignore", "info", "list",
                           "reset-dep", "run", "strace", "tabcompletion"})

T = TypeVar("T")

# Set by the ``lab`` CLI before it drives doit; None under the ``doit`` executable.
REQUESTED: set[str] | None = None


def doit_config(variables: dict[str, str] | None = None) -> dict[str, Any]:
    """DOIT_CONFIG: sqlite3 dependency DB in the data dir, ``eval`` by default.

    ``jobs=N`` runs N runs at once in threads; ``json=true`` silences
    everything but the JSON lines. Both are read from doit's variables here
    because doit fixes its runner before any task exists; Hydra validates
    them again when the tasks are created.
    """
    from lab.execute.progress import LabReporter, reset_display

    data = paths.data_dir()
    data.mkdir(parents=True, exist_ok=True)
    variables = _cmdline_variables() if variables is None else variables
    quiet = variables.get("json", "false").lower() in {"true", "1", "yes"}
    reset_display(quiet=quiet)
    config: dict[str, Any] = {"dep_file": str(data / ".doit.sqlite"), "backend": "sqlite3",
                              "default_tasks": ["eval"], "verbosity": 2, "reporter": LabReporter}
    jobs = variables.get("jobs", "1")
    if jobs.isdigit() and int(jobs) > 1:
        config.update(num_process=int(jobs), par_type="thread")
    return config


def _cmdline_variables() -> dict[str, str]:
    from doit import doit_cmd

    return dict(doit_cmd._CMDLINE_VARS or {})  # doit keeps no public accessor for all of them


def cmdline_overrides() -> list[str]:
    """Every ``key=value`` doit received, in command-line order, as Hydra overrides."""
    return [f"{key}={value}" for key, value in _cmdline_variables().items()]


def requested(basename: str) -> bool:
    """Whether this command asked for ``basename`` (creators stay cheap otherwise)."""
    if REQUESTED is not None:
        return basename in REQUESTED
    words = [a for a in sys.argv[1:] if not a.startswith("-") and "=" not in a]
    names = {w.split(":", 1)[0] for w in words if w not in DOIT_COMMANDS}
    if not words:
        return basename == "eval"  # doit's default task
    return basename in names


@dataclass
class Prepared:
    """A composed config, loaded suite and planned runs for one command."""

    ctx: Any
    specs: list[Any]
    store: Path
    run_id: str
    k: int
    basename: str = "eval"

    @property
    def report_dir(self) -> Path:
        return self.store / "reports" / self.run_id

    def record_path(self, spec: Any) -> Path:
        return self.store / "runs" / str(spec.task_id) / f"{spec.name}.json"


def prepare(overrides: list[str], *, mode: str | None = None, basename: str = "eval") -> Prepared:
    """Compose the config once, load the suite, check grants and plan the runs.

    Raises:
        LabError: ConfigError or SuiteError naming the key, task and field.
    """
    from lab.config.compose import compose_config
    from lab.execute.events import EventLog, stderr_if
    from lab.execute.plan import check_grants, plan_runs, run_id, select_tasks
    from lab.execute.run import EvalContext
    from lab.suites.source import resolve_suite

    if mode is not None:
        overrides = [*overrides, f"mode={mode}"]
    config = compose_config(overrides)
    out = config.data["out"]
    if out and Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"config: out: {out} exists and is not a directory")
    suite = resolve_suite(config)
    tasks = select_tasks(suite, list(config.data["tasks"]))
    check_grants(tasks, config, suite.id)
    cassettes = paths.from_root(config.data["cassette_dir"] or paths.CASSETTES_DIR)
    agent = config.data["agent"]
    if agent.get("kind") == "command":
        from lab.agents.command import CommandPreset, check_installed

        check_installed(CommandPreset.from_config(agent), paths.data_dir())
        if config.mode == "replay" and not any((cassettes / suite.id / "agents" / agent["name"]).glob("*.jsonl")):
            raise ConfigError(f"replay: no cassettes for agent {agent['name']} on suite {suite.id} in "
                              f"{cassettes / suite.id / 'agents' / agent['name']} (record them first)")
    elif config.mode == "replay" and not any((cassettes / suite.id).glob("*.jsonl")):
        raise ConfigError(f"replay: no cassettes for suite {suite.id} in {cassettes / suite.id} "
                          f"(record them with `doit record suite={suite.id}`, or set cassette_dir=)")
    k = 1 if config.mode == "record" else config.k
    store = paths.data_dir() / suite.id / config.config_hash()[:12]
    subset = [t.id for t in tasks] if len(tasks) < len(suite.tasks) else None
    rid = run_id(suite.id, config.config_hash(), k, config.seed, subset)
    events = EventLog({"suiteId": suite.id, "configHash": config.config_hash(), "runId": rid},
                      path=store / "events.jsonl", stream=stderr_if(config.data["progress"]))
    ctx = EvalContext(config=config, suite=suite, cassette_dir=cassettes, work_dir=store / "work",
                      events=events)
    return Prepared(ctx=ctx, specs=plan_runs([t.id for t in tasks], k, config.seed), store=store,
                    run_id=rid, k=k, basename=basename)


def usage_error_tasks(basename: str, message: str) -> Iterator[dict[str, Any]]:
    """Tasks that print ``message`` to stderr and make doit exit 1, before any run.

    (doit turns an exception in a task creator into exit 3 with its own
    wording; SPEC wants exit 1 and the lab's one-line message.)
    """
    hidden = f"_{basename}_usage_error"
    yield {"basename": hidden, "actions": [(_usage_error, [message])], "verbosity": 2}
    yield {"name": "usage-error", "actions": None, "task_dep": [hidden]}


def _usage_error(message: str) -> Any:
    from doit.exceptions import TaskFailed

    print(message, file=sys.stderr)
    return TaskFailed(message, report=False)


def creator(basename: str, plan: Callable[[], T], build: Callable[[T], Iterator[dict[str, Any]]],
            *, prefix: str = "") -> Iterator[dict[str, Any]]:
    """The shape of every task creator: nothing unless ``basename`` was asked for;
    ``plan()`` composes and checks everything up front, and a LabError it raises
    becomes a one-line usage error (exit 1) before anything runs."""
    if not requested(basename):
        return
    try:
        planned = plan()
    except LabError as exc:
        yield from usage_error_tasks(basename, f"{prefix}{exc}")
        return
    yield from build(planned)


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
    start_eval(prep)
    yield from (run_task(prep, spec, always=always) for spec in prep.specs)
    yield report_task(prep)
    yield {"name": f"{prep.run_id}.summary", "actions": [(summary_action, [prep, prep.report_dir, gate])],
           "task_dep": [f"{prep.basename}:{prep.run_id}.report"], "uptodate": [False], "verbosity": 2}


def start_eval(prep: Prepared) -> None:
    """Create the run store, save the config, announce the eval, route Ctrl-C to it."""
    from lab.execute import interrupt

    ctx = prep.ctx
    prep.store.mkdir(parents=True, exist_ok=True)
    _write_config(prep)
    ctx.events.emit("eval_started", runs=len(prep.specs), k=prep.k, mode=ctx.config.mode)
    interrupt.install(ctx.cancel, ctx.idle, ctx.active_elsewhere,
                      lambda signum: ctx.events.emit("run_cancelled", signal=signal_name(signum)))


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
    return {"name": _run_name(prep, spec), "actions": [(run_action, [prep.ctx, spec, target, inputs])],
            "targets": [str(target)], "uptodate": [False] if force else [RecordCurrent(target, inputs)],
            "meta": {"lab": "run", "events": prep.ctx.events,
                     "ident": {"taskId": spec.task_id, "repetition": spec.repetition, "seed": spec.seed}},
            "verbosity": 2}


def run_inputs(prep: Prepared, spec: Any) -> dict[str, Any]:
    """What a run's result depends on: config hash, harness and suite digests,
    task, base seed, repetition, and in replay the cassette's sha256."""
    import hashlib

    from lab.execute.plan import harness_digest

    ctx = prep.ctx
    inputs: dict[str, Any] = {
        "configHash": ctx.config_hash, "harnessDigest": harness_digest(), "suiteDigest": ctx.suite.digest,
        "taskId": spec.task_id, "baseSeed": spec.base_seed, "repetition": spec.repetition}
    if ctx.config.mode == "replay":
        from lab.replay.cassette import cassette_path

        cassette = cassette_path(ctx.cassette_dir, ctx.suite.id, spec.task_id)
        inputs["cassetteDigest"] = (hashlib.sha256(cassette.read_bytes()).hexdigest()
                                    if cassette.exists() else None)
    return inputs


def report_task(prep: Prepared) -> dict[str, Any]:
    """The report over every planned run's record (missing ones count as not run)."""
    records = [prep.record_path(spec) for spec in prep.specs]
    header = report_header(prep)
    return {"name": f"{prep.run_id}.report",
            "actions": [(report_action, [prep, records, prep.report_dir, header])],
            "task_dep": [f"{prep.basename}:{_run_name(prep, spec)}" for spec in prep.specs],
            "targets": [str(prep.report_dir / "report.json")],
            "uptodate": [RecordsUnchanged(records, header)], "verbosity": 2}


def _run_name(prep: Prepared, spec: Any) -> str:
    return f"{prep.ctx.suite.id}.{prep.ctx.config_hash[:12]}.{spec.task_id}.{spec.name}"


def _write_config(prep: Prepared) -> None:
    from lab.files import dumps_json, write_atomic

    ctx = prep.ctx
    doc = {"schemaVersion": 1, "configHash": ctx.config_hash, "variant": ctx.config.variant,
           "measured": ctx.config.measured_view(), "config": _public_config(ctx.config.data)}
    path = prep.store / "config.json"
    data = dumps_json(doc).encode("utf-8")
    if not path.exists() or path.read_bytes() != data:
        write_atomic(path, data)


def _public_config(data: dict[str, Any]) -> dict[str, Any]:
    """The config as saved beside the runs: no runtime knobs that vary per command."""
    return {k: v for k, v in data.items() if k not in {"progress", "json", "yes", "force", "out"}}


