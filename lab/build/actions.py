"""The actions doit runs for an eval: one run, the report, the summary, the CI gate.

``lab.build.graph`` builds the task graph; these functions are what its tasks
execute. Each returns None on success, or doit's ``TaskFailed`` (exit 1) /
``TaskError`` (exit 2, replay divergence) with ``report=False``: the lab has
already printed its one-line reason.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lab.build.records import (  # re-exported: the up-to-date checks of run records
    RESULT_STATUSES,
    RecordCurrent,
    RecordsUnchanged,
    forgotten_marker,
    is_result,
    record_written,
    records_digest,
)
from lab.console import print_line
from lab.execute.harness import machine_id  # re-exported: the machine fingerprint of run records
from lab.files import loads_json, read_text

__all__ = ["OUTCOME", "RESULT_STATUSES", "RecordCurrent", "RecordsUnchanged", "ci_gate_action", "disk_faults",
           "exit_with", "forgotten_marker", "is_result", "machine_id", "records_digest", "report_action", "report_header",
           "run_action", "summary_action"]

# Filled by the summary actions; read by ``lab run`` to return the SPEC exit code.
OUTCOME: dict[str, Any] = {}

Action = TypeVar("Action", bound=Callable[..., Any])


def disk_faults(action: Action) -> Action:
    """Wrap an action so that a fault of the disk it writes to (full, read-only, gone) is one
    line naming the data dir and the fault, and exit 1, instead of doit's traceback."""

    @functools.wraps(action)
    def guarded(*args: Any) -> Any:
        from doit.exceptions import TaskFailed

        from lab import paths
        from lab.build.depdb import DISK_FAULT_REPORTED, describe_os_error

        try:
            return action(*args)
        except OSError as exc:
            message = describe_os_error(exc, paths.data_dir())
            print_line(message, sys.stderr)
            DISK_FAULT_REPORTED.append(message)
            return TaskFailed(message, report=False)
    return guarded  # type: ignore[return-value]


def exit_with(code: int) -> Any:
    """What a final action returns so doit exits with ``code`` (0, 1 or 2), silently."""
    from doit.exceptions import TaskError, TaskFailed

    if code == 2:
        return TaskError("replay divergence", report=False)  # doit: exit 2
    if code == 1:
        return TaskFailed("failed", report=False)  # doit: exit 1
    return None


def ci_gate_action(report_dirs: list[Path], skipped: list[tuple[str, str]], progress: bool = False) -> Any:
    from lab.compare.gate import ci_verdict
    from lab.execute.events import emit_run_error
    from lab.execute.progress import display

    code, text = ci_verdict(report_dirs, skipped)
    display().stop()
    print(text, flush=True)
    if code:  # after every suite's own events: the gate's verdict is the command's last word
        emit_run_error(None, text.splitlines()[-1], code, progress=progress)
    OUTCOME.update(code=code)
    return exit_with(code)


def failure_reason(report_dir: Path) -> str:
    """One line on why an eval's exit code is not 0: divergences or errored runs, from its report."""

    summary = loads_json(read_text(report_dir / "report.json"))["summary"]
    if summary["divergences"]:
        return f"replay divergence: {summary['divergences']} run(s) diverged from the recording"
    return f"{summary['errors']} run(s) could not be judged (infrastructure errors)"


VOIDED_LINE = "eval voided: three infrastructure errors in a row; the remaining runs are not attempted"


@disk_faults
def run_action(ctx: Any, spec: Any, target: Path, inputs: dict[str, Any]) -> Any:
    from lab.execute.progress import display

    ident = {"taskId": spec.task_id, "repetition": spec.repetition, "seed": spec.seed}
    if ctx.voided or ctx.cancel.is_set():
        ctx.events.emit("run_not_run", **ident, reason="voided" if ctx.voided else "cancelled")
        return None
    failure = _open_execution(ctx)
    if failure is not None:
        return failure
    from lab.build.claims import claim, run_lock

    # Another command on this data dir may be running this very run: wait for it, then
    # take its record when it holds a result (each run is executed once, SPEC X4).
    with claim(run_lock(target), on_wait=lambda pid: _note_wait(ctx, pid)):
        rerun = ctx.config.data["force"] or ctx.config.mode == "record"
        if not rerun and RecordCurrent(target, inputs)(None, {}):
            ctx.events.emit("run_skipped", **ident, reason="run by another command")
            display().run_skipped(str(ctx.events.identity.get("runId", "")))
            return None
        _execute(ctx, spec, target, inputs, ident)


def _open_execution(ctx: Any) -> Any:
    """Open the executor, and for ``executor=local`` the runs' sandbox, before the first run this
    command executes (an eval with every run up to date starts none); a backend that cannot be used,
    or is not the one the runs were planned with, or a Ray cluster that cannot be reached, stops the
    command (exit 1, one line, said once) before any run. On a cluster each worker opens its own."""
    from doit.exceptions import TaskFailed

    from lab.errors import LabError
    from lab.execute.events import emit_run_error

    try:
        if ctx.executor is None:
            from lab.execute.executor import executor_for

            ctx.executor = executor_for(dict(ctx.config.data.get("executor") or {"name": "local"}))
        if ctx.executor.name == "local":
            ctx.sandbox_in_force()
    except LabError as exc:
        message = str(exc)
        with ctx.idle:
            first = message not in ctx.warned
            ctx.warned.add(message)
        if first:
            print_line(message, sys.stderr)
            emit_run_error(ctx.events, message, 1)
        return TaskFailed(message, report=False)
    return None


def _note_wait(ctx: Any, pid: str) -> None:
    """Say once per other command that this one waits for the runs it is executing."""
    from lab.execute.progress import display

    note = f"waiting for runs another command on this data dir is executing (pid {pid})"
    if note not in ctx.warned:
        ctx.warned.add(note)
        display().print(f"  {note}")


def _execute(ctx: Any, spec: Any, target: Path, inputs: dict[str, Any], ident: dict[str, Any]) -> None:
    """Execute one claimed run, write its record, report it on the console."""
    from lab.execute.events import notify_record
    from lab.execute.progress import display
    from lab.files import write_json
    from lab.report import run_json_line

    ctx.events.emit("run_started", **ident)
    try:
        with ctx.running():
            record = ctx.executor.execute(ctx, spec)
    except KeyboardInterrupt:
        ctx.cancel.set()
        ctx.events.emit("run_cancelled", **ident)
        raise
    if record is None or ctx.cancel.is_set():
        ctx.events.emit("run_cancelled", **ident)
        return None  # no record: the next identical command runs it again
    record["inputs"] = inputs
    if "agent" in inputs and isinstance(record.get("agent"), dict):  # the program measured
        identity = inputs["agent"]
        record["agent"].update(executable=identity["executable"], digest=identity["digest"],
                               reported=identity["reported"])
    write_json(target, record)
    record_written(target)
    notify_record(record)
    forgotten_marker(target).unlink(missing_ok=True)
    ctx.events.emit("run_finished", **ident, status=record["status"])
    voided = ctx.note_result(record)
    if voided:
        ctx.events.emit("eval_voided", reason="three infrastructure errors in a row")
    for warning in record.get("warnings", []):
        if warning not in ctx.warned:
            ctx.warned.add(warning)
            print_line(f"warning: {warning}", sys.stderr)
    if ctx.config.data["json"]:
        print_line(run_json_line(record))
        if voided:
            print_line(VOIDED_LINE, sys.stderr)  # stdout holds only JSON lines
        return None
    variant = f"{ctx.label}: " if ctx.label else ""
    line = f"  {record['status']:<15} {variant}{spec.task_id} r{spec.repetition}  ({record['wallMs'] / 1000:.2f} s)"
    if record.get("error"):
        from lab.report.closing import one_line

        line += "  " + one_line(f"{record['error'].get('kind')}: {record['error'].get('message')}")
    if record.get("workspace"):
        line += f"  workspace kept at {record['workspace']}"
    display().run_finished(line, record["status"])
    if voided:
        display().print(VOIDED_LINE)


def _runtime_note(prep: Any) -> str | None:
    """One line when runtime settings differ from those the reused run records were made with."""
    from lab.config.identity import runtime_differences, runtime_settings

    index = prep.record_index()
    recorded = [facts.runtime for facts in map(index.last_seen, map(prep.record_path, prep.specs))
                if facts is not None]  # not run: nothing to compare with
    changed = runtime_differences(recorded, runtime_settings(prep.ctx.config.data))
    if not changed:
        return None
    verb = "is a runtime setting" if len(changed) == 1 else "are runtime settings"
    return f"up to date: {', '.join(changed)} {verb}, not part of a run's identity; force=true to run again"


def report_header(prep: Any) -> dict[str, Any]:
    """The conditions a report states (SPEC: a number carries its conditions)."""
    from lab.execute.harness import report_code_digest
    from lab.execute.plan import HARNESS_VERSION, harness_digest

    ctx = prep.ctx
    provider, agent = ctx.config.data["provider"], ctx.config.data["agent"]
    return {"runId": prep.run_id, "suiteId": ctx.suite.id, "suiteVersion": ctx.suite.version,
            "suiteDigest": ctx.suite.digest, "harnessVersion": HARNESS_VERSION,
            "harnessDigest": harness_digest(), "configHash": ctx.config_hash,
            "variant": ctx.config.variant, "provider": provider["name"], "model": provider["model"],
            "endpoint": _endpoint_header(prep),
            "mode": ctx.config.mode, "sandbox": ctx.sandbox_name(),
            "k": prep.k, "seed": ctx.config.seed,
            "rates": dict(ctx.config.data["rates"]), "compaction": dict(agent["compaction"]),
            "agent": _agent_header(prep),
            "runsRequested": len(prep.specs), "tasksRequested": len({s.task_id for s in prep.specs}),
            "reportCodeDigest": report_code_digest()}


def _agent_header(prep: Any) -> dict[str, Any]:
    """The agent a report measured: name, kind, pinned version; for a command agent also the
    resolved executable, the digest of its files and the version its package reports."""
    agent = prep.ctx.config.data["agent"]
    header = {"name": agent["name"], "kind": agent.get("kind", "builtin"), "version": agent.get("version")}
    if header["kind"] == "command":
        from lab.build.inputs import command_agent_identity

        identity = command_agent_identity(prep)
        header.update(executable=identity["executable"], digest=identity["digest"], reported=identity["reported"])
    return header


def _endpoint_header(prep: Any) -> dict[str, Any]:
    """The endpoint identity a report states: provider kind, endpoint URL (or null) and store key."""
    from lab.config.identity import endpoint_key

    return {"provider": prep.endpoint.get("provider"), "url": prep.endpoint.get("endpoint"),
            "key": endpoint_key(prep.endpoint)}


@disk_faults
def report_action(prep: Any, records: list[Path], report_dir: Path, header: dict[str, Any],
                  expected: list[dict[str, Any]] | None = None) -> Any:
    """Build and publish the report over the planned runs' records.

    ``expected`` holds each planned run's inputs: a record on disk made from
    other inputs (an older cassette, harness or suite; an eval voided before
    it re-ran that run) is not this eval's result and counts as not run.
    """
    from doit.exceptions import TaskFailed

    from lab.errors import LabError
    from lab.report import write_report_from_files

    ctx = prep.ctx
    if ctx.cancel.is_set():
        return TaskFailed("cancelled: no report published", report=False)
    from lab.build.claims import claim, report_lock

    with claim(report_lock(report_dir)):  # built from the records on disk (streamed), published whole
        vanished = prep.record_index().vanished(records)
        if vanished:  # a report over them would count finished runs as never attempted
            message = (f"{len(vanished)} run record(s) of this eval were removed while it ran "
                       f"(doit clean, or another command), e.g. {vanished[0]}; no report published: "
                       f"run the eval again to execute them")
            print_line(f"error: {message}", sys.stderr)
            ctx.events.emit("run_error", reason=message, exitCode=1)
            return TaskFailed(message, report=False)
        try:
            write_report_from_files(report_dir, header, records, expected=expected)
        except LabError as exc:  # a record file that is not a run record
            print_line(f"error: {exc}", sys.stderr)
            ctx.events.emit("run_error", reason=str(exc), exitCode=1)
            return TaskFailed(str(exc), report=False)
        digest = records_digest(records, header)
    ctx.events.emit("report_written", path=str(report_dir))
    return {"records": digest}


@disk_faults
def recorded_line(prep: Any) -> str:
    """``cassettes: DIR (n of N tasks recorded)``: where a record command wrote its cassettes."""
    from lab.execute.agent_cassettes import agent_cassette_path
    from lab.replay.layout import cassette_path

    ctx = prep.ctx
    agent = ctx.config.data["agent"]
    tasks = sorted({spec.task_id for spec in prep.specs})
    if agent.get("kind") == "command":
        files = [agent_cassette_path(ctx.cassette_dir, ctx.suite.id, agent["name"], t) for t in tasks]
    else:
        files = [cassette_path(ctx.cassette_dir, ctx.suite.id, t) for t in tasks]
    written = sum(f.is_file() for f in files)
    where = files[0].parent if files else ctx.cassette_dir / ctx.suite.id
    words = ["mode=replay", *([f"agent={agent['name']}"] if agent.get("kind") == "command" else []),
             *([f"cassette_dir={ctx.cassette_dir}"] if ctx.config.data["cassette_dir"] else [])]
    return f"cassettes: {where} ({written} of {len(tasks)} task(s) recorded; replay them with {' '.join(words)})"


def summary_action(prep: Any, report_dir: Path, gate: bool = True) -> Any:
    from doit.exceptions import TaskFailed

    from lab.build.summary import summarise_report
    from lab.execute.progress import display

    code, text = summarise_report(report_dir)
    out = prep.ctx.config.data["out"]
    if out:  # every time, also when the report itself was up to date
        from lab.files import copy_files

        try:
            copy_files(report_dir, Path(out).absolute())
        except OSError as exc:
            message = f"out: cannot write the report to {out}: {exc.strerror or exc}"
            print(message, file=sys.stderr)
            prep.ctx.events.emit("run_error", reason=message, exitCode=1)
            return TaskFailed("out not writable", report=False)
    up_to_date = display().skipped_by.get(prep.run_id, 0)
    prep.ctx.events.emit("eval_finished", exitCode=code, upToDate=up_to_date, executed=display().done)
    if code:
        prep.ctx.events.emit("run_error", reason=failure_reason(report_dir), exitCode=code)
    if prep.ctx.config.data["json"]:
        import json

        doc = loads_json(read_text(report_dir / "report.json"))
        print(json.dumps(doc, ensure_ascii=False, separators=(",", ":")), flush=True)
    else:
        if gate:
            display().stop()  # the last words of the eval: below the bar, which goes away
        if up_to_date:
            kept = ("; keep=true keeps the workspaces of executed runs only (add force=true to run them again)"
                    if prep.ctx.config.data["keep"] else "")
            text = f"{up_to_date} run(s) up to date, not executed again{kept}\n{text}"
            note = _runtime_note(prep)
            if note:
                text = f"{note}\n{text}"
        if prep.ctx.config.mode == "record":
            text = f"{text}\n{recorded_line(prep)}"
        if out:
            text = f"{text}\nout: {Path(out).absolute()} (a copy of the report's files)"
        display().print(text)
    OUTCOME.update(code=code, report_dir=str(report_dir))
    prep.record_index().save()
    if not gate:
        return None
    return exit_with(code)
