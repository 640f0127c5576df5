"""report.md: the conditions, the rates, then measured and estimated tables apart (SPEC M8).

Only formats a report document from :func:`lab.report.build.build_report`;
it computes nothing. Unknown figures print as an em dash. :func:`iter_markdown`
writes it line by line; its long tables (errors, failed runs, per task) read
their rows from the document's lists, which may be spools
(``lab.report.spool``), so a 100k-run report.md is never one string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lab.console import visible
from lab.report.build import sort_records
from lab.report.executor_status import EXECUTOR_STATUSES, LABELS
from lab.report.tables import table_lines

DASH = "—"


def pct(value: float | None) -> str:
    """``0.5`` → ``50.0%``; None → an em dash."""
    return DASH if value is None else f"{100 * value:.1f}%"


def interval(bounds: list[float] | None) -> str:
    """A Wilson interval as ``[0.1234, 0.5678]``; None → an em dash."""
    return DASH if bounds is None else f"[{bounds[0]:.4f}, {bounds[1]:.4f}]"


def num(value: float | int | None, digits: int = 1) -> str:
    """An int as is, a float with ``digits`` decimals, None as an em dash."""
    if value is None:
        return DASH
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _cell(text: Any) -> str:
    """Table-safe text: no newlines, control characters escaped, pipes escaped."""
    return visible(" ".join(str(text).split())).replace("|", "\\|")


class Rows:
    """A re-iterable view of ``source`` (a list or a spool) with ``row`` applied to each item."""

    def __init__(self, source: Iterable[Any], row: Callable[[Any], tuple[Any, ...]]) -> None:
        self.source, self.row = source, row

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return map(self.row, self.source)


def _table(rows: Iterable[tuple[Any, ...]], headers: list[str]) -> Iterator[str]:
    """A table's lines (rows iterated twice), then an empty line."""
    yield from table_lines(rows, headers, cell=_cell)
    yield ""


def conditions(h: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows stating the conditions of a report (shared with the HTML page)."""
    rows = [
        ("suite", f"{h['suiteId']} {h['suiteVersion']} (digest {h['suiteDigest'][:12]})"),
        ("harness", f"{h['harnessVersion']} (digest {h['harnessDigest'][:12]})"),
        ("config hash", h["configHash"]), ("variant", h.get("variant") or "baseline"),
        ("provider / model", f"{h['provider']} / {h['model']}"),
        ("endpoint", endpoint_text(h)),
        *([("agent", agent_text(h["agent"]))] if h.get("agent") else []),
        ("mode", h["mode"]), ("k", str(h["k"])), ("seed", str(h["seed"])), ("run id", h["runId"]),
    ]
    if "sandbox" in h:
        rows.insert(6, ("sandbox", h["sandbox"]))
    compaction = h.get("compaction")
    if compaction is not None:
        state = "on" if compaction.get("enabled") else "off"
        rows.append(("compaction", f"{state}, threshold {compaction.get('threshold')}"))
    rates = h.get("rates") or {}
    if rates.get("input") is not None or rates.get("output") is not None:
        rows.append(("rates (USD / M tokens)", f"input {rates.get('input')}, output {rates.get('output')}"))
    return rows


def agent_text(agent: dict[str, Any]) -> str:
    """The measured agent as a report states it: ``aider 0.86.2 (reports 0.86.2, digest 3f2a9c1e0b7d)``."""
    text = f"{agent['name']} {agent.get('version') or ''}".strip()
    details = [f"reports {agent['reported']}"] if agent.get("reported") else []
    details += [f"digest {agent['digest'][:12]}"] if agent.get("digest") else []
    return f"{text} ({', '.join(details)})" if details else text


def endpoint_text(h: dict[str, Any]) -> str:
    """The measured endpoint as a report states it: ``openai http://host:port/v1 (key openai-1a2b3c4d)``,
    ``cassettes (replay: no network)``, ``scripted (no network)``.

    Reports written before the endpoint identity existed say ``not recorded``.
    """
    endpoint = h.get("endpoint")
    if not isinstance(endpoint, dict):
        return "not recorded"
    if endpoint.get("provider") == "cassette":
        return "cassettes (replay: no network)"
    if not endpoint.get("url"):
        return f"{endpoint.get('provider')} (no network)"
    return f"{endpoint.get('provider')} {endpoint['url']} (key {endpoint.get('key')})"


def render_markdown(doc: dict[str, Any], records: list[dict[str, Any]] | None = None) -> str:
    """The Markdown report for a report document from ``build_report``.

    With the run ``records``, a "Failed runs" section says why each run that
    was judged and did not pass failed: the failing verifiers and their detail,
    or the budget that stopped it (as ``index.html`` and ``junit.xml`` do).
    """
    failed = [row for run in sort_records(records or []) for row in failed_rows(run)]
    return "".join(iter_markdown(doc, failed))


def iter_markdown(doc: dict[str, Any], failed: Iterable[tuple[Any, ...]] = ()) -> Iterator[str]:
    """report.md in chunks (see :func:`render_markdown`).

    Args:
        doc: the report document (its lists may be spools).
        failed: the "Failed runs" rows (:func:`failed_rows` of each run, in
            report order), iterated twice; none leaves the section out.
    """
    first = True
    for line in _lines(doc, failed):
        yield line if first else "\n" + line
        first = False


def _lines(doc: dict[str, Any], failed: Iterable[tuple[Any, ...]]) -> Iterator[str]:
    h, s = doc["header"], doc["summary"]
    yield from (f"# {h['suiteId']} {h['suiteVersion']} — {h['mode']}", "")
    if "note" in h:
        yield from (f"> {h['note']}", "")
    yield from ("## Conditions", "")
    yield from _table(conditions(h), ["", ""])
    yield from ("## Summary", "")
    yield from _table(summary_rows(s), ["", ""])
    yield from (line for notice in notices(doc) for line in (notice, ""))
    yield from ("## Tasks", "")
    yield from _task_table(doc["tasks"], replay=doc["header"].get("mode") == "replay")
    yield from _executor_lines(doc)
    yield from _repetition_lines(doc["repetition"])
    yield from _measured_lines(doc.get("measured"))
    yield from _estimated_lines(doc.get("estimated"), doc)
    if doc["errors"]:
        yield from ("## Errors (not judged)", "")
        yield from _table(Rows(doc["errors"], lambda e: (e["taskId"], e["repetition"], e["kind"], e["message"])),
                          ["task", "rep", "kind", "message"])
    if failed:
        yield from ("## Failed runs", "")
        yield from _table(failed, ["task", "rep", "status", "failing check", "detail"])


DETAIL_CHARS = 200
"""Longest verifier detail shown in report.md (the full text is in runs.jsonl and index.html)."""


def failed_rows(run: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The "Failed runs" rows of one run: one per failing verifier of a fail / budget_exceeded run, else none."""
    if run["status"] not in ("fail", "budget_exceeded"):
        return []
    reasons = [(f"{v['id']} ({v.get('kind', '?')})", _one_line(v.get("detail")))
               for v in run.get("verifiers", []) if v["status"] != "pass"]
    if run["status"] == "budget_exceeded":
        reasons.insert(0, ("budget", _one_line(run.get("budgetExceeded") or "exceeded")))
    return [(run["taskId"], run["repetition"], run["status"], why, detail)
            for why, detail in reasons or [("—", "no verifier failed")]]


def _one_line(text: Any) -> str:
    flat = visible(" ".join(str(text or "").split()))
    return flat if len(flat) <= DETAIL_CHARS else flat[:DETAIL_CHARS - 1] + "…"


def summary_rows(s: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, value) rows of the summary block (shared with the HTML page)."""
    cached = s["cachedInput"]
    return [("runs", s["runs"]), ("judged", s["judged"]), ("passes", s["passes"]), ("fails", s["fails"]),
            ("budget exceeded", s["budgetExceeded"]), ("errors (excluded)", s["errors"]),
            ("success rate", f"{pct(s['successRate'])} {interval(s['wilson95'])} (95% Wilson)"
             if s["wilson95"] is not None or s["successRate"] is None else pct(s["successRate"])),
            ("pass@k (tasks)", pct(s["passAtK"])),
            ("pass^k (tasks)", pct(s["passHatK"]) + (f" {interval(s['passHatKWilson95'])} (95% Wilson over tasks)"
                                                     if s.get("passHatKWilson95") else "")),
            *([("detectable change (80% power, α=0.05)", detectable_text(s["detectable"]))]
              if s.get("detectable") else []),
            ("false positives / negatives", f"{s['falsePositives']} / {s['falseNegatives']}"),
            ("replay divergences", s["divergences"]),
            ("empty responses (runs)", s.get("emptyResponses", 0)),
            ("cached input", ("not reported" if cached["ratio"] is None else f"{pct(cached['ratio'])} of input tokens")
             + f" ({cached['runsReporting']} of {cached['runsJudged']} judged runs reporting)")]


def detectable_text(d: dict[str, Any]) -> str:
    """SPEC K8 in one line: what a comparison with as many runs could detect (shared with the HTML page)."""
    def points(value: float | None) -> str:
        return "no change up to 100 points" if value is None else f"±{100 * value:.1f} points"

    if not d["tasks"]:
        return DASH
    return (f"suite mean: {points(d['aggregate'])}; one task alone: {points(d['perTaskMedian'])} "
            f"(median over {d['tasks']} tasks, Holm α/{d['tasks']})")


def notices(doc: dict[str, Any]) -> list[str]:
    """Plain-text warnings: low power (M3), flaky tasks (M2), partial cached input (M5)."""
    s = doc["summary"]
    lines = []
    if s["lowPower"]:
        lines.append(f"Low power: {s['judged']} judged runs overall (fewer than 5); intervals are wide.")
    if s["lowPowerTasks"]:
        lines.append(f"Low power: {len(s['lowPowerTasks'])} of {s['tasks']} tasks have fewer than 5 judged "
                     f"runs: {', '.join(s['lowPowerTasks'])}.")
    if s["flakyTasks"]:
        lines.append(f"Flaky tasks (pass@k yes, pass^k no): {', '.join(s['flakyTasks'])}.")
    if s["cachedInput"]["runsPartial"]:
        lines.append(f"Cached input: {s['cachedInput']['runsPartial']} run(s) reported cached tokens on only "
                     "some turns (cachedPartial) and are left out of the ratio.")
    rep = doc["repetition"]
    if rep["completed"] < rep["requested"]:
        lines.append(f"Incomplete: {rep['completed']} of {rep['requested']} requested runs have a record"
                     + (" (the eval was voided after repeated infrastructure errors)." if doc["header"].get("voided")
                        else "."))
    if s["divergences"]:
        lines.append(f"Replay divergence: {s['divergences']} run(s) asked for something the recording "
                     "does not hold; see the errors.")
    return lines


def _task_row(t: dict[str, Any], replay: bool) -> tuple[Any, ...]:
    flags = [f for f, on in (("flaky", t["flaky"]), ("low power", t["lowPower"])) if on]
    row = [t["taskId"], t["judged"], t["passes"], t["fails"], t["budgetExceeded"], t["errors"],
           pct(t["successRate"]), interval(t["wilson95"]), pct(t["passAtK"]), _pass_hat_k(t),
           t["falsePositives"], t["falseNegatives"], pct(t["cachedInputRatio"]), ", ".join(flags)]
    return tuple(row[:7] + row[8:]) if replay else tuple(row)


def _pass_hat_k(t: dict[str, Any]) -> str:
    bounds = t.get("passHatK95")
    return pct(t["passHatK"]) + ("" if bounds is None else f" [{bounds[0]:.2f}, {bounds[1]:.2f}]")


def _task_table(tasks: Iterable[dict[str, Any]], *, replay: bool = False) -> Iterator[str]:
    """The per-task table; a replay has no sampling interval, so no Wilson column."""
    headers = ["task", "judged", "pass", "fail", "budget", "error", "rate", "95% Wilson",
               "pass@k", "pass^k" if replay else "pass^k [95%]", "FP", "FN", "cached", "flags"]
    return _table(Rows(tasks, lambda t: _task_row(t, replay)), headers[:7] + headers[8:] if replay else headers)


class ExecutorRows:
    """Per-task executor status rows ``(task, succeeded, failed, cancelled, timed out)``, then the ``all``
    row (re-iterable: a table reads its rows twice; shared with the HTML page)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        for t in self.doc["tasks"]:
            block = t.get("executorStatus") or {}
            yield (t["taskId"], *(block.get(key, 0) for key in EXECUTOR_STATUSES))
        overall = self.doc["summary"]["executorStatus"]
        yield ("all", *(overall[key] for key in EXECUTOR_STATUSES))


def _executor_lines(doc: dict[str, Any]) -> Iterator[str]:
    """How the runs' executions ended, per task and overall (lab.report.executor_status); absent in older reports."""
    if "executorStatus" not in doc["summary"]:
        return
    yield from ("## Executor status", "")
    yield from _table(ExecutorRows(doc), ["task", *(LABELS[key] for key in EXECUTOR_STATUSES)])


def _repetition_lines(rep: dict[str, Any]) -> Iterator[str]:
    rows = [("requested (k × tasks)", rep["requested"]), ("completed (records)", rep["completed"]),
            ("assessed (judged)", rep["assessed"]), ("invalid (errored)", rep["invalid"]),
            ("resolved (passed)", rep["resolved"]), ("all resolved", "yes" if rep["allResolved"] else "no"),
            ("score mean / min / max", " / ".join(num(rep[k], 3) for k in ("scoreMean", "scoreMin", "scoreMax")))]
    yield from ("## Repetition summary", "")
    yield from _table(rows, ["", ""])
    if rep["variableTasks"]:
        yield from (f"Variable tasks: {', '.join(rep['variableTasks'])}.", "")
    if rep["variableVerifiers"]:
        names = ", ".join(f"{v['taskId']}/{v['verifierId']}" for v in rep["variableVerifiers"])
        yield from (f"Variable verifiers (observed passing and failing): {names}.", "")
    if rep["verifiers"]:
        yield from _table(Rows(rep["verifiers"], lambda v: (v["taskId"], v["verifierId"],
                                                            f"{v['passed']}/{v['assessed']}")),
                          ["task", "verifier", "passed/assessed"])


MEASURED_ROWS = (("judged runs", "runsJudged", 0), ("runs reporting usage", "runsReportingUsage", 0),
                 ("input tokens", "inputTokens", 0), ("output tokens", "outputTokens", 0),
                 ("tokens per attempt", "tokensPerAttempt", 1), ("tokens per success", "tokensPerSuccess", 1),
                 ("wall ms median", "wallMsMedian", 1), ("wall ms variance", "wallMsVariance", 1),
                 ("wall ms per success", "wallMsPerSuccess", 1), ("turns", "turns", 0),
                 ("tool calls", "toolCalls", 0), ("compactions", "compactions", 0),
                 # present only when some run reports them (absent is not zero)
                 ("cache write tokens", "cacheWriteTokens", 0),
                 ("runs reporting cache writes", "runsReportingCacheWrites", 0),
                 ("provider-reported cost (USD)", "providerCostUsd", 4),
                 ("runs reporting provider cost", "runsReportingProviderCost", 0))


def _measured_lines(m: dict[str, Any] | None) -> Iterator[str]:
    if m is None:
        yield from ("## Measured", "", "No judged runs: nothing was measured.", "")
        return
    yield from ("## Measured", "",
                "Provider-reported usage (main loop only, compaction calls excluded), wall time and event counts "
                "over judged runs. Per success = all judged spend, failures included, divided by successes.", "")
    if m["usageIncomplete"]:
        missing = ", ".join(f"{r['taskId']} r{r['repetition']}" for r in m["runsMissingUsage"])
        yield from (f"Token figures omitted: {m['runsJudged'] - m['runsReportingUsage']} of {m['runsJudged']} "
                    f"judged runs did not report usage ({missing}).", "")
    yield from _table([(label, num(m[key], digits)) for label, key, digits in MEASURED_ROWS if key in m],
                      ["figure", "value"])
    yield from ("### Measured per task", "")
    yield from _table(Rows(m["tasks"], lambda t: (t["taskId"], t["runsJudged"], num(t.get("inputTokens")),
                                                  num(t.get("outputTokens")), num(t.get("tokensPerSuccess")),
                                                  num(t["wallMsMedian"]), num(t["wallMsPerSuccess"]))),
                      ["task", "judged", "input tokens", "output tokens", "tokens / success",
                       "wall ms median", "wall ms / success"])


def estimate_absent_reason(doc: dict[str, Any]) -> str:
    """Why a report has no ``estimated`` block (shared with the HTML page)."""
    rates = doc["header"].get("rates") or {}
    if rates.get("input") is None or rates.get("output") is None:
        return "No cost estimate: both rates.input and rates.output (USD per million tokens) are needed."
    if doc.get("measured") is None:
        return "No cost estimate: no run was judged."
    return "No cost estimate: some judged runs did not report usage, and no price is ever guessed."


def pricing_note(e: dict[str, Any]) -> str:
    """How cached input and cache writes were priced (shared with the HTML page)."""
    rates = e["rates"]
    parts = [f"{label} priced at {'its own rate' if key in rates else 'the input rate'}"
             for label, key in (("cached input", "cachedInputUsdPerMTok"), ("cache writes", "cacheWriteUsdPerMTok"))]
    return "; ".join(parts)


def estimated_rows(e: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows of the estimated block (shared with the HTML page)."""
    rows = [("cost (USD)", f"{e['costUsd']:.4f}"), ("cost per attempt (USD)", f"{e['costUsdPerAttempt']:.4f}"),
            ("cost per success (USD)", num(e["costUsdPerSuccess"], 4)),
            ("input rate (USD / M tokens)", str(e["rates"]["inputUsdPerMTok"])),
            ("output rate (USD / M tokens)", str(e["rates"]["outputUsdPerMTok"]))]
    for label, key in (("cached input rate (USD / M tokens)", "cachedInputUsdPerMTok"),
                       ("cache write rate (USD / M tokens)", "cacheWriteUsdPerMTok")):
        if key in e["rates"]:
            rows.append((label, str(e["rates"][key])))
    return rows


def _estimated_lines(e: dict[str, Any] | None, doc: dict[str, Any]) -> Iterator[str]:
    yield from ("## Estimated", "")
    if e is None:
        yield from (estimate_absent_reason(doc), "")
        return
    yield from (f"Estimated from the given rates ({pricing_note(e)}); never added to measured figures.", "")
    yield from _table(estimated_rows(e), ["figure", "value"])
    yield from ("### Estimated per task", "")
    yield from _table(Rows(e["tasks"], lambda t: (t["taskId"], f"{t['costUsd']:.4f}",
                                                  num(t["costUsdPerSuccess"], 4))),
                      ["task", "cost (USD)", "cost per success (USD)"])
