"""The actions doit runs for an eval: one run, the report, the summary, the CI gate.

``lab.build.graph`` builds the task graph; these functions are what its tasks
execute. Each returns None on success, or doit's ``TaskFailed`` (exit 1) /
``TaskError`` (exit 2, replay divergence) with ``report=False``: the lab has
already printed its one-line reason.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# Filled by the summary actions; read by ``lab run`` to return the SPEC exit code.
OUTCOME: dict[str, Any] = {}


def exit_with(code: int) -> Any:
    """What a final action returns so doit exits with ``code`` (0, 1 or 2), silently."""
    from doit.exceptions import TaskError, TaskFailed

    if code == 2:
        return TaskError("replay divergence", report=False)  # doit: exit 2
    if code == 1:
        return TaskFailed("failed", report=False)  # doit: exit 1
    return None


def ci_gate_action(report_dirs: list[Path], skipped: list[tuple[str, str]]) -> Any:
    from lab.compare.gate import ci_verdict
    from lab.execute.progress import display

    code, text = ci_verdict(report_dirs, skipped)
    display().stop()
    print(text, flush=True)
    OUTCOME.update(code=code)
    return exit_with(code)


class RecordCurrent:
    """doit uptodate check: the record exists and was made from these inputs."""

    def __init__(self, target: Path, inputs: dict[str, Any]) -> None:
        self.target = target
        self.inputs = inputs

    def __call__(self, task: Any, values: dict[str, Any]) -> bool:
        import json

        try:
            record = json.loads(self.target.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(record, dict) and record.get("inputs") == self.inputs


class RecordsUnchanged:
    """doit uptodate check: the report is current while its conditions and run records are.

    Records may be missing (runs not executed after an eval was voided), so
    they cannot be doit file_deps; their digest is compared instead.
    """

    def __init__(self, records: list[Path], header: dict[str, Any]) -> None:
        self.records = records
        self.header = header

    def __call__(self, task: Any, values: dict[str, Any]) -> bool:
        return bool(values.get("records") == records_digest(self.records, self.header))


def records_digest(records: list[Path], header: dict[str, Any]) -> str:
    """sha256 over the report's conditions and its records' paths and contents (``-`` if missing)."""
    import hashlib

    from lab.canonical import canonical_json

    digest = hashlib.sha256(canonical_json(header).encode("utf-8"))
    for path in records:
        digest.update(str(path).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.exists() else b"-")
    return digest.hexdigest()


def run_action(ctx: Any, spec: Any, target: Path, inputs: dict[str, Any]) -> None:
    from lab.execute.progress import display
    from lab.execute.run import execute_run
    from lab.files import write_json
    from lab.report import run_json_line

    ident = {"taskId": spec.task_id, "repetition": spec.repetition, "seed": spec.seed}
    if ctx.voided or ctx.cancel.is_set():
        ctx.events.emit("run_not_run", **ident, reason="voided" if ctx.voided else "cancelled")
        return
    ctx.events.emit("run_started", **ident)
    try:
        with ctx.running():
            record = execute_run(ctx, spec)
    except KeyboardInterrupt:
        ctx.cancel.set()
        ctx.events.emit("run_cancelled", **ident)
        raise
    if ctx.cancel.is_set():
        ctx.events.emit("run_cancelled", **ident)
        return  # no record: the next identical command runs it again
    record["inputs"] = inputs
    write_json(target, record)
    ctx.events.emit("run_finished", **ident, status=record["status"])
    if ctx.note_result(record):
        ctx.events.emit("eval_voided", reason="three infrastructure errors in a row")
    for warning in record.get("warnings", []):
        if warning not in ctx.warned:
            ctx.warned.add(warning)
            print(f"warning: {warning}", file=sys.stderr, flush=True)
    if ctx.config.data["json"]:
        print(run_json_line(record), flush=True)
        return
    line = f"  {record['status']:<15} {spec.task_id} r{spec.repetition}  ({record['wallMs'] / 1000:.2f} s)"
    if record.get("error"):
        line += f"  {record['error'].get('kind')}: {record['error'].get('message')}"
    if record.get("workspace"):
        line += f"  workspace kept at {record['workspace']}"
    display().run_finished(line, record["status"])


def report_header(prep: Any) -> dict[str, Any]:
    """The conditions a report states (SPEC: a number carries its conditions)."""
    from lab.execute.plan import harness_digest
    from lab.execute.run import HARNESS_VERSION

    ctx = prep.ctx
    provider, agent = ctx.config.data["provider"], ctx.config.data["agent"]
    return {"runId": prep.run_id, "suiteId": ctx.suite.id, "suiteVersion": ctx.suite.version,
            "suiteDigest": ctx.suite.digest, "harnessVersion": HARNESS_VERSION,
            "harnessDigest": harness_digest(), "configHash": ctx.config_hash,
            "variant": ctx.config.variant, "provider": provider["name"], "model": provider["model"],
            "mode": ctx.config.mode, "k": prep.k, "seed": ctx.config.seed,
            "rates": dict(ctx.config.data["rates"]), "compaction": dict(agent["compaction"]),
            "agent": {"name": agent["name"], "kind": agent.get("kind", "builtin"),
                      "version": agent.get("version")},
            "runsRequested": len(prep.specs), "tasksRequested": len({s.task_id for s in prep.specs})}


def report_action(prep: Any, records: list[Path], report_dir: Path, header: dict[str, Any]) -> Any:
    import json

    from doit.exceptions import TaskFailed

    from lab.report import build_report, write_report

    ctx = prep.ctx
    if ctx.cancel.is_set():
        return TaskFailed("cancelled: no report published", report=False)
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in records if p.exists()]
    doc = build_report({**header, "voided": len(runs) < len(records)}, runs)
    write_report(report_dir, doc, runs)
    ctx.events.emit("report_written", path=str(report_dir))
    return {"records": records_digest(records, header)}


def summary_action(prep: Any, report_dir: Path, gate: bool = True) -> Any:
    from doit.exceptions import TaskFailed

    from lab.execute.progress import display
    from lab.report.closing import summarise

    code, text = summarise(report_dir)
    out = prep.ctx.config.data["out"]
    if out:  # every time, also when the report itself was up to date
        from lab.files import copy_files

        try:
            copy_files(report_dir, Path(out).absolute())
        except OSError as exc:
            print(f"out: cannot write the report to {out}: {exc.strerror or exc}", file=sys.stderr)
            return TaskFailed("out not writable", report=False)
    prep.ctx.events.emit("eval_finished", exitCode=code, upToDate=display().skipped,
                         executed=display().done)
    if prep.ctx.config.data["json"]:
        import json

        doc = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
        print(json.dumps(doc, ensure_ascii=False, separators=(",", ":")), flush=True)
    else:
        if gate:
            display().stop()  # the last words of the eval: below the bar, which goes away
        if display().skipped:
            text = f"{display().skipped} run(s) up to date, not executed again\n{text}"
        display().print(text)
    OUTCOME.update(code=code, report_dir=str(report_dir))
    if not gate:
        return None
    return exit_with(code)
