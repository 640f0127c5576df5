"""index.html: a self-contained page linking every run's evidence (SPEC M8).

The page has inline CSS only — no script, no external asset, no CDN — so it
can be opened from a CI artifact. Wilson intervals are drawn as inline SVG
bars. Each task row links to its runs; each run has an anchor
(:func:`run_anchor`) holding its verifier details, diagnostics (stderr tail
included), claim, error and event log. Figures are formatted here; the
template (``templates/index.html.j2``, autoescaped) only lays them out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from lab.report.build import sort_records
from lab.report.markdown import (
    DASH,
    MEASURED_ROWS,
    conditions,
    estimate_absent_reason,
    estimated_rows,
    interval,
    notices,
    num,
    pct,
    pricing_note,
    summary_rows,
)

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
BAR_WIDTH_PX = 160
EVENTS_SHOWN = 500  # per run; the full log is always in runs.jsonl
ARGUMENTS_CHARS = 240
TAILS = ("stderrTail", "stdoutTail")


def run_anchor(task_id: str, repetition: int) -> str:
    """The HTML id of a run's evidence section: ``run-<taskId>-r<repetition>``."""
    return f"run-{task_id}-r{repetition}"


def task_anchor(task_id: str) -> str:
    """The HTML id of a task's row: ``task-<taskId>``."""
    return f"task-{task_id}"


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def iter_html(doc: dict[str, Any], records: list[dict[str, Any]]) -> Iterator[str]:
    """index.html in chunks, for writing a large report without holding the page in memory."""
    return _environment().get_template("index.html.j2").generate(page=_page(doc, sort_records(records)))


def render_html(doc: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The index.html text for a report document and its run records."""
    return "".join(iter_html(doc, records))


def wilson_bar(rate: float | None, bounds: list[float] | None) -> dict[str, str] | None:
    """SVG coordinates (px, as text) of an interval bar; None when nothing was judged."""
    if rate is None or bounds is None:
        return None
    low, high = (BAR_WIDTH_PX * b for b in bounds)
    point = min(max(BAR_WIDTH_PX * rate - 1, 0.0), BAR_WIDTH_PX - 2.0)
    return {"x": f"{low:.1f}", "width": f"{max(high - low, 1.0):.1f}", "point": f"{point:.1f}",
            "label": f"{pct(rate)}, 95% Wilson {interval(bounds)}"}


def _page(doc: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    h, s = doc["header"], doc["summary"]
    runs_by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        runs_by_task.setdefault(record["taskId"], []).append(record)
    return {
        "title": f"{h['suiteId']} {h['suiteVersion']} — {h['mode']}", "note": h.get("note"),
        "replay": h.get("mode") == "replay",
        "conditions": conditions(h), "summary": [(label, str(value)) for label, value in summary_rows(s)],
        "summaryBar": wilson_bar(s["successRate"], s["wilson95"]), "notices": notices(doc),
        "tasks": [_task_view(t, runs_by_task.get(t["taskId"], [])) for t in doc["tasks"]],
        "repetition": _repetition_view(doc["repetition"]),
        "measured": _measured_view(doc.get("measured")),
        "estimated": _estimated_view(doc.get("estimated")),
        "estimateAbsent": None if "estimated" in doc else estimate_absent_reason(doc),
        "errors": [{**e, "anchor": run_anchor(e["taskId"], e["repetition"])} for e in doc["errors"]],
        "runs": (_run_view(r) for r in records),  # a generator: one run's view alive at a time
    }


def _task_view(t: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    flags = [f for f, on in (("flaky", t["flaky"]), ("low power", t["lowPower"])) if on]
    return {"id": t["taskId"], "anchor": task_anchor(t["taskId"]), "judged": t["judged"], "passes": t["passes"],
            "fails": t["fails"], "budget": t["budgetExceeded"], "errors": t["errors"],
            "rate": pct(t["successRate"]), "interval": interval(t["wilson95"]),
            "bar": wilson_bar(t["successRate"], t["wilson95"]), "passAtK": pct(t["passAtK"]),
            "passHatK": pct(t["passHatK"]), "fp": t["falsePositives"], "fn": t["falseNegatives"],
            "cached": pct(t["cachedInputRatio"]), "flags": ", ".join(flags),
            "runs": [{"anchor": run_anchor(r["taskId"], r["repetition"]), "label": f"r{r['repetition']}",
                      "status": r["status"]} for r in runs]}


def _repetition_view(rep: dict[str, Any]) -> dict[str, Any]:
    rows = [("requested (k × tasks)", rep["requested"]), ("completed (records)", rep["completed"]),
            ("assessed (judged)", rep["assessed"]), ("invalid (errored)", rep["invalid"]),
            ("resolved (passed)", rep["resolved"]), ("all resolved", "yes" if rep["allResolved"] else "no"),
            ("score mean / min / max", " / ".join(num(rep[k], 3) for k in ("scoreMean", "scoreMin", "scoreMax"))),
            ("variable tasks", ", ".join(rep["variableTasks"]) or DASH),
            ("variable verifiers", ", ".join(f"{v['taskId']}/{v['verifierId']}"
                                             for v in rep["variableVerifiers"]) or DASH)]
    return {"rows": [(label, str(value)) for label, value in rows],
            "verifiers": [(v["taskId"], v["verifierId"], f"{v['passed']}/{v['assessed']}",
                           0 < v["passed"] < v["assessed"]) for v in rep["verifiers"]]}


def _measured_view(m: dict[str, Any] | None) -> dict[str, Any] | None:
    if m is None:
        return None
    missing = ", ".join(f"{r['taskId']} r{r['repetition']}" for r in m["runsMissingUsage"])
    return {"rows": [(label, num(m[key], digits)) for label, key, digits in MEASURED_ROWS if key in m],
            "omitted": (f"Token figures omitted: {m['runsJudged'] - m['runsReportingUsage']} of "
                        f"{m['runsJudged']} judged runs did not report usage ({missing}).")
            if m["usageIncomplete"] else None,
            "tasks": [(t["taskId"], str(t["runsJudged"]), num(t.get("inputTokens")), num(t.get("outputTokens")),
                       num(t.get("tokensPerSuccess")), num(t["wallMsMedian"]), num(t["wallMsPerSuccess"]))
                      for t in m["tasks"]]}


def _estimated_view(e: dict[str, Any] | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"rows": estimated_rows(e), "note": pricing_note(e),
            "tasks": [(t["taskId"], f"{t['costUsd']:.4f}", num(t["costUsdPerSuccess"], 4)) for t in e["tasks"]]}


def _short(value: Any, limit: int = ARGUMENTS_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _known(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    return "not reported" if value is None else str(value)


def _verifier_view(v: dict[str, Any]) -> tuple[Any, ...]:
    """(id, kind, weight, status, detail, diagnostics as ``k=v; …``, [(tail name, text)])."""
    diagnostics = v.get("diagnostics") or {}
    facts = "; ".join(f"{k}={_short(diagnostics[k])}" for k in sorted(diagnostics) if k not in TAILS)
    tails = [(k, str(diagnostics[k])) for k in TAILS if diagnostics.get(k)]
    return (v["id"], v["kind"], num(v.get("weight"), 2), v["status"], v["detail"], facts, tails)


def _event_view(e: dict[str, Any]) -> tuple[str, ...]:
    """(seq, type, turn, name, outcome, detail) of one H6 event."""
    kind = e.get("type", "")
    if kind == "model_call":
        name, outcome = str(e.get("purpose")), str(e.get("finishReason"))
        usage = e.get("usage")
        detail = (f"{e.get('latencyMs')} ms; " + ("usage not reported" if usage is None else
                  f"in {_known(usage, 'inputTokens')}, out {_known(usage, 'outputTokens')}, "
                  f"cached {_known(usage, 'cachedInputTokens')}"))
    elif kind == "tool_call":
        name, outcome = str(e.get("tool")), str(e.get("outcome"))
        detail = _short(e.get("arguments")) + (f" — error: {e['error']}" if e.get("error") else "")
    elif kind == "approval":
        name, outcome, detail = str(e.get("tool")), str(e.get("decision")), f"effect {e.get('effect')}"
    else:
        name, outcome, detail = str(e.get("kind", "")), "", str(e.get("detail", ""))
    turn = e.get("turn")
    return (str(e.get("seq", "")), kind, "" if turn is None else str(turn), name, outcome, detail)


def _usage_text(usage: dict[str, Any] | None) -> str:
    if usage is None or usage.get("inputTokens") is None or usage.get("outputTokens") is None:
        return "not reported"
    cached = ("partial (only some turns reported it)" if usage.get("cachedPartial")
              else _known(usage, "cachedInputTokens"))
    return f"input {usage['inputTokens']}, output {usage['outputTokens']}, cached input {cached}"


def _run_view(r: dict[str, Any]) -> dict[str, Any]:
    """Everything the run's evidence section shows, formatted."""
    usage_text = _usage_text(r.get("usage"))
    error = r.get("error")
    events = r.get("events") or []
    facts = [("status", r["status"]), ("claim", r.get("claim")), ("stop reason", r.get("stopReason")),
             ("budget exceeded", r.get("budgetExceeded")), ("seed", r["seed"]), ("score", num(r.get("score"), 3)),
             ("wall ms", r.get("wallMs")), ("turns", r.get("turns")), ("tool calls", r.get("toolCalls")),
             ("compactions", r.get("compactions")), ("usage (main loop)", usage_text),
             ("started / finished", f"{r.get('startedAt')} / {r.get('finishedAt')}")]
    if r.get("compactionUsage"):
        facts.append(("usage (compaction calls, not in main loop)", _usage_text(r["compactionUsage"])))
    if r.get("workspace"):
        facts.append(("workspace kept at", r["workspace"]))
    return {"anchor": run_anchor(r["taskId"], r["repetition"]), "taskAnchor": task_anchor(r["taskId"]),
            "taskId": r["taskId"], "repetition": r["repetition"], "status": r["status"],
            "facts": [(label, DASH if value is None else str(value)) for label, value in facts],
            "finalMessage": r.get("finalMessage"),
            "verifiers": [_verifier_view(v) for v in r.get("verifiers", [])],
            "error": None if not error else {"kind": str(error.get("kind")), "message": str(error.get("message")),
                                             "traceback": error.get("traceback")},
            "divergence": [(k, _short(v)) for k, v in sorted((r.get("divergence") or {}).items())],
            "events": [_event_view(e) for e in events[:EVENTS_SHOWN]],
            "eventsHidden": max(len(events) - EVENTS_SHOWN, 0)}
