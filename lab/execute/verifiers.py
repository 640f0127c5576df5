"""Deterministic verifiers (SPEC V1–V7): did the run leave the workspace right?

Each verifier spec is a dict from ``suite.json`` (camelCase keys) with an ``id``,
a ``kind`` and an optional ``weight``. ``run_verifiers`` runs them in order and
returns one ``VerifierResult`` each:

- ``pass`` / ``fail``: the check ran and the workspace did / did not satisfy it;
- ``error``: the check could not run (path outside the workspace, command does
  not start, events missing, invalid spec). An error is neither pass nor fail.

A copy past the bounds the lab reads it within (:mod:`lab.sandbox.walk`) makes
a file or tree check ``fail`` with the bound as reason: the agent's failure.

Kinds: ``command``, ``file-equals``, ``file-contains``, ``file-absent``,
``tree-diff-within``, ``tool-sequence``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.errors import LabError, ProcessStartError, ToolError
from lab.execute.tool_sequence import check_tool_sequence
from lab.execute.verifier_spec import Outcome, VerifierStatus
from lab.execute.verifier_spec import SpecInvalid as _SpecInvalid
from lab.execute.verifier_spec import spec_field as _field
from lab.providers.faults import one_line
from lab.sandbox.base import SandboxBackend, command_limits, start_failure
from lab.sandbox.confined import inspect_confined
from lab.sandbox.none import NoneBackend
from lab.sandbox.process import run_launch
from lab.sandbox.walk import TreeBoundError
from lab.sandbox.workspace import Snapshot, diff_snapshots, snapshot

MAX_TIMEOUT_MS = 600_000
DEFAULT_TIMEOUT_MS = 60_000
STDERR_TAIL_BYTES = 2048
_SHOWN_PATHS = 5


@dataclass(frozen=True)
class VerifierResult:
    """The verdict of one verifier.

    Attributes:
        id: the verifier's id from the suite.
        kind: its kind (``command`` …), as written in the suite.
        status: ``pass``, ``fail`` or ``error`` (could not run).
        detail: one human-readable line saying why.
        weight: its weight in the run's score (>= 0, default 1).
        diagnostics: kind-specific facts, camelCase keys (JSON-serialisable).
    """

    id: str
    kind: str
    status: VerifierStatus
    detail: str
    weight: float = 1.0
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "status": self.status,
                "detail": self.detail, "weight": self.weight,
                "diagnostics": dict(self.diagnostics)}


@dataclass(frozen=True)
class _Context:
    workspace: Path
    baseline: Snapshot
    events: list[dict[str, Any]] | None
    env: Mapping[str, str]
    cancel: threading.Event | None
    sandbox: SandboxBackend
    answer: str | None = None


# --- command (V1) -------------------------------------------------------------

def _check_command(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
    argv = _field(spec, "argv", list)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise _SpecInvalid(f"field 'argv': expected a non-empty list of strings, got {argv!r}")
    timeout_ms = _field(spec, "timeoutMs", int, DEFAULT_TIMEOUT_MS)
    if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise _SpecInvalid(f"field 'timeoutMs': expected 1..{MAX_TIMEOUT_MS}, got {timeout_ms}")
    expect_exit = _field(spec, "expectExit", int, 0)
    expect_text = _field(spec, "expectStdoutIncludes", str, None)
    launch = ctx.sandbox.wrap(argv, workspace=ctx.workspace, env=ctx.env,
                              limits=command_limits(timeout_ms))
    try:
        result = run_launch(launch, timeout_ms=timeout_ms, cancel=ctx.cancel)
    except ProcessStartError as exc:
        return "error", str(exc), {}
    not_started = start_failure(result.exit_code, result.stderr)
    if not_started:
        return "error", not_started, {}
    diagnostics = {
        "exitCode": result.exit_code,
        "stdoutBytes": result.stdout_bytes,
        "stderrBytes": result.stderr_bytes,
        "stderrTail": result.stderr[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace"),
        "timedOut": result.timed_out,
        "durationMs": result.duration_ms,
    }
    if result.cancelled:
        return "error", "cancelled", diagnostics
    if result.timed_out:
        return "fail", f"timed out after {timeout_ms} ms (process group killed)", diagnostics
    if result.exit_code != expect_exit:
        return "fail", f"exit code {result.exit_code}, expected {expect_exit}", diagnostics
    if expect_text is not None and expect_text not in result.stdout.decode(
            "utf-8", errors="replace"):
        return "fail", f"stdout does not include {one_line(expect_text, 80)!r}", diagnostics
    return "pass", f"exit code {result.exit_code} as expected", diagnostics


# --- files (V2–V4) ------------------------------------------------------------

def _read_file(spec: Mapping[str, Any], ctx: _Context) -> tuple[str, bytes | None]:
    """(rel, bytes) of the spec's path; bytes None when missing or not a regular file.

    Nothing is followed: a path the agent turned into a symbolic link, a FIFO
    or a directory is the agent's doing, so the check fails (it is not an
    infrastructure error).
    """
    rel = _field(spec, "path", str)
    found = inspect_confined(ctx.workspace, rel)
    return rel, found.data


def _what(ctx: _Context, rel: str) -> str:
    return inspect_confined(ctx.workspace, rel, read=False).describe()


def _check_file_equals(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
    expected = _field(spec, "sha256", str).lower()
    rel, data = _read_file(spec, ctx)
    if data is None:
        return "fail", f"{rel} is missing (or not a regular file: {_what(ctx, rel)})", {"expectedSha256": expected}
    actual = hashlib.sha256(data).hexdigest()
    diagnostics = {"expectedSha256": expected, "actualSha256": actual, "bytes": len(data)}
    if actual != expected:
        return "fail", f"{rel} has sha256 {actual[:12]}…, expected {expected[:12]}…", diagnostics
    return "pass", f"{rel} matches sha256 {expected[:12]}…", diagnostics


def _check_file_contains(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
    text = _field(spec, "text", str)
    rel, data = _read_file(spec, ctx)
    if data is None:
        return "fail", f"{rel} is missing (or not a regular file: {_what(ctx, rel)})", {}
    if text.encode("utf-8") not in data:
        return "fail", f"{rel} does not contain {one_line(text, 80)!r}", {"bytes": len(data)}
    return "pass", f"{rel} contains {one_line(text, 80)!r}", {"bytes": len(data)}


def _check_file_absent(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
    rel = _field(spec, "path", str)
    # Anything at the name counts as present, a dangling link included; a
    # directory on the way that became a link is the agent's doing too.
    found = inspect_confined(ctx.workspace, rel, read=False)
    if found.kind != "absent":
        return "fail", f"{rel} exists ({found.describe()})", {}
    return "pass", f"{rel} is absent", {}


# --- tree-diff-within (V5) ----------------------------------------------------

def _allowed(path: str, allowed: list[str]) -> bool:
    for entry in allowed:
        entry = entry.removeprefix("./")
        if entry.endswith("/") and path.startswith(entry):
            return True
        if path == entry:
            return True
    return False


def _check_tree_diff(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
    allowed = _field(spec, "allowed", list)
    if not all(isinstance(a, str) for a in allowed):
        raise _SpecInvalid(f"field 'allowed': expected a list of strings, got {allowed!r}")
    diff = diff_snapshots(ctx.baseline, snapshot(ctx.workspace))
    offending = [p for p in diff.paths if not _allowed(p, allowed)]
    diagnostics = {"added": len(diff.added), "changed": len(diff.changed),
                   "deleted": len(diff.deleted), "offending": offending[:100]}
    if offending:
        shown = ", ".join(offending[:_SHOWN_PATHS])
        more = f" (+{len(offending) - _SHOWN_PATHS} more)" if len(offending) > _SHOWN_PATHS else ""
        return "fail", f"{len(offending)} path(s) changed outside allowed: {shown}{more}", \
            diagnostics
    return "pass", f"{len(diff.paths)} changed path(s), all allowed", diagnostics


# --- tool-sequence (V6) -------------------------------------------------------

def _check_tool_sequence(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
    if ctx.events is None:
        return "error", "events missing", {}
    return check_tool_sequence(spec, ctx.events)


def _check_answer(kind: str) -> Callable[[Mapping[str, Any], _Context], Outcome]:
    from lab.execute import answer_checks

    check = answer_checks.check_answer_contains if kind == "contains" else answer_checks.check_answer_matches

    def run(spec: Mapping[str, Any], ctx: _Context) -> Outcome:
        try:
            status, detail, diagnostics = check(spec, ctx.answer)
        except ValueError as exc:
            raise _SpecInvalid(str(exc)) from None
        return status, detail, diagnostics  # type: ignore[return-value]

    return run


_KINDS: dict[str, Callable[[Mapping[str, Any], _Context], Outcome]] = {
    "command": _check_command,
    "file-equals": _check_file_equals,
    "file-contains": _check_file_contains,
    "file-absent": _check_file_absent,
    "tree-diff-within": _check_tree_diff,
    "tool-sequence": _check_tool_sequence,
    "answer-contains": _check_answer("contains"),
    "answer-matches": _check_answer("matches"),
}
KINDS = frozenset(_KINDS)
"""Every verifier kind this module knows."""


def _weight(spec: Mapping[str, Any]) -> tuple[float, str | None]:
    raw = spec.get("weight", 1)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw >= 0:
        return 1.0, f"field 'weight': expected a number >= 0, got {raw!r}"
    return float(raw), None


def _run_one(spec: Mapping[str, Any], index: int, ctx: _Context) -> VerifierResult:
    verifier_id = str(spec.get("id", f"verifiers[{index}]"))
    kind = str(spec.get("kind", ""))
    weight, weight_problem = _weight(spec)

    def result(status: VerifierStatus, detail: str,
               diagnostics: dict[str, Any] | None = None) -> VerifierResult:
        return VerifierResult(verifier_id, kind, status, detail, weight, diagnostics or {})

    if weight_problem:
        return result("error", f"invalid verifier: {weight_problem}")
    if ctx.cancel is not None and ctx.cancel.is_set():
        return result("error", "cancelled")
    check = _KINDS.get(kind)
    if check is None:
        return result("error", f"unknown verifier kind {kind!r}")
    try:
        status, detail, diagnostics = check(spec, ctx)
    except _SpecInvalid as exc:
        return result("error", f"invalid verifier: {exc}")
    except ToolError as exc:  # path outside the workspace, or unresolvable
        return result("error", str(exc))
    except TreeBoundError as exc:  # the agent left a tree or file past the lab's bounds: its failure
        return result("fail", one_line(str(exc), 200), {"bound": True})
    except (OSError, LabError) as exc:  # unreadable file, snapshot failed
        return result("error", one_line(f"{type(exc).__name__}: {exc}", 200))
    except Exception as exc:  # noqa: BLE001 - one broken verifier must not stop the others
        return result("error", f"verifier crashed: {type(exc).__name__}: {one_line(str(exc), 80)}")
    return result(status, one_line(detail, 200), diagnostics)


def run_verifiers(specs: list[dict[str, Any]], *, workspace: Path, baseline: Snapshot,
                  events: list[dict[str, Any]] | None, env: Mapping[str, str],
                  cancel: threading.Event | None = None, answer: str | None = None,
                  sandbox: SandboxBackend | None = None) -> list[VerifierResult]:
    """Run every verifier of a task against its workspace, in order.

    Args:
        specs: verifier dicts from ``suite.json`` (``id``, ``kind``, kind fields,
            optional ``weight``).
        workspace: the task copy; commands run here and paths resolve here.
        baseline: ``snapshot`` of the workspace taken before the agent ran.
        events: the run's event log (H6); ``None`` makes tool-sequence verifiers
            ``error`` ("events missing").
        env: variables of command verifiers, set over the sandbox backend's
            base environment (``PATH``, ``HOME`` …; see ``lab.sandbox.base``).
        cancel: when set, a running command is killed and every verifier not
            yet finished is ``error`` "cancelled".
        answer: the agent's final message, for ``answer-contains`` /
            ``answer-matches`` (``lab.execute.answer_checks``); None = no answer.
        sandbox: where command verifiers run (``SandboxBackend.wrap``, no
            network); None runs them on the host (the ``none`` backend).

    Returns:
        One ``VerifierResult`` per spec, same order. Never raises for a bad
        spec, a missing file or a crashing check: that verifier is ``error``.
    """
    ctx = _Context(Path(workspace), baseline, events, env, cancel, sandbox or NoneBackend(), answer)
    return [_run_one(spec, index, ctx) for index, spec in enumerate(specs)]


def score(results: list[VerifierResult]) -> float | None:
    """Weighted share of passing verifiers (V7).

    Returns:
        sum(weight of passes) / sum(weights), in [0, 1]; ``error`` and ``fail``
        both count as not passing. ``None`` when the total weight is 0 (no
        verifiers, or all weights 0).
    """
    total = sum(r.weight for r in results)
    if total <= 0:
        return None
    return sum(r.weight for r in results if r.status == "pass") / total
