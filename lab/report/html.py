"""index.html: a self-contained page of pictures and tables linking every run's evidence (SPEC M8).

The page has inline CSS and inline SVG only — no script, no external asset,
no CDN — so it can be opened from a CI artifact. Its charts
(``lab.report.charts``, drawn by ``templates/_charts.html.j2``): success
rate per task with Wilson error bars, pass@k / pass^k per task, and the
distribution of tokens and wall time per run per task. Each task row links
to its runs; each run has an anchor (:func:`run_anchor`) holding its
verifier details, diagnostics (stderr tail included), claim, error and
event log (``lab.report.evidence``: collapsed per task, on the page up to
1000 runs, on run pages of 1000 runs past that). Figures are formatted
here; the template (``templates/index.html.j2``, autoescaped) only lays them
out. The page is written in chunks from the document's lists, which may be
spools: its tables never exist whole in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from markupsafe import Markup

from lab.report.build import sort_records
from lab.report.charts import Chart, Unit, five_numbers, label_px, pass_k_chart, rate_chart, spread_chart
from lab.report.evidence import RUNS_PER_PAGE, HtmlRuns, environment, page_links, run_anchor, task_anchor
from lab.report.executor_status import EXECUTOR_STATUSES, LABELS
from lab.report.markdown import (
    DASH,
    MEASURED_ROWS,
    ExecutorRows,
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

__all__ = ["iter_html", "render_html", "run_anchor", "task_anchor", "wilson_bar"]

BAR_WIDTH_PX = 160


def iter_html(doc: dict[str, Any], runs: HtmlRuns) -> Iterator[str]:
    """index.html in chunks, for the report ``doc`` and what :class:`HtmlRuns` kept of its runs."""
    return environment().get_template("index.html.j2").generate(page=_page(doc, runs))


def render_html(doc: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The index.html text for a report document and its run records (no run pages are written)."""
    h = doc["header"]
    runs = HtmlRuns(len(records), f"{h['suiteId']} {h['suiteVersion']}")
    for record in sort_records(records):
        runs.add(record)
    runs.close()
    return "".join(iter_html(doc, runs))


def wilson_bar(rate: float | None, bounds: list[float] | None) -> dict[str, str] | None:
    """SVG coordinates (px, as text) of an interval bar; None when nothing was judged."""
    if rate is None or bounds is None:
        return None
    low, high = (BAR_WIDTH_PX * b for b in bounds)
    point = min(max(BAR_WIDTH_PX * rate - 1, 0.0), BAR_WIDTH_PX - 2.0)
    return {"x": f"{low:.1f}", "width": f"{max(high - low, 1.0):.1f}", "point": f"{point:.1f}",
            "label": f"{pct(rate)}, 95% Wilson {interval(bounds)}"}


def _page(doc: dict[str, Any], runs: HtmlRuns) -> dict[str, Any]:
    h, s = doc["header"], doc["summary"]
    charts = _charts(doc)
    return {
        "title": f"{h['suiteId']} {h['suiteVersion']} — {h['mode']}", "note": h.get("note"),
        "replay": h.get("mode") == "replay",
        "conditions": conditions(h), "summary": [(label, str(value)) for label, value in summary_rows(s)],
        "summaryBar": wilson_bar(s["successRate"], s["wilson95"]), "notices": notices(doc),
        "tasks": (_task_view(t, links) for t, links in _with_links(doc["tasks"], runs.tasks)),
        "executor": ExecutorRows(doc) if "executorStatus" in s else None,
        "executorLabels": [LABELS[key] for key in EXECUTOR_STATUSES],
        "charts": charts, "repetition": _repetition_view(doc["repetition"]),
        "measured": _measured_view(doc.get("measured"), charts["tokensPerRun"], charts["wallMsPerRun"]),
        "estimated": _estimated_view(doc.get("estimated")),
        "estimateAbsent": None if "estimated" in doc else estimate_absent_reason(doc),
        "hasErrors": bool(doc["errors"]), "errors": _errors_view(doc["errors"], runs.errors),
        "runCount": runs.runs, "perPage": RUNS_PER_PAGE, "runPages": page_links(runs.runs),
        "evidence": (Markup(section) for section in runs.sections),
    }


def _charts(doc: dict[str, Any]) -> dict[str, Chart | None]:
    """The page's charts by key: rate, passk, tokensPerRun, wallMsPerRun (None: no task has the figure)."""
    s, tasks = doc["summary"], doc["tasks"]
    left = label_px(t["taskId"] for t in tasks)
    measured = (doc.get("measured") or {}).get("tasks", [])

    def pairs() -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
        return _with_measured(tasks, measured)

    return {"rate": rate_chart(s, tasks, left, doc["header"].get("mode") == "replay"),
            "passk": pass_k_chart(s, tasks, left, int(doc["header"]["k"])),
            **{key: spread_chart(key, pairs, int(s["tasks"]), left) for key in ("tokensPerRun", "wallMsPerRun")}}


def _with_measured(tasks: Iterable[dict[str, Any]],
                   measured: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each task block with its ``measured.tasks`` block (both in task order; None when nothing was judged)."""
    pending = iter(measured)
    block = next(pending, None)
    for task in tasks:
        if block is not None and block["taskId"] == task["taskId"]:
            yield task, block
            block = next(pending, None)
        else:
            yield task, None


def _with_links(tasks: Iterable[dict[str, Any]],
                links: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], list[dict[str, str]]]]:
    """Each task block with its run links (both in task order; a task without runs has none)."""
    pending = iter(links)
    link = next(pending, None)
    for task in tasks:
        while link is not None and link["taskId"] < task["taskId"]:
            link = next(pending, None)
        if link is not None and link["taskId"] == task["taskId"]:
            yield task, link["runs"]
            link = next(pending, None)
        else:
            yield task, []


def _errors_view(errors: Iterable[dict[str, Any]], hrefs: Iterable[list[Any]]) -> Iterator[dict[str, Any]]:
    """Each error line with the link to its run's evidence (both in report order)."""
    pending = iter(hrefs)
    found = next(pending, None)
    for e in errors:
        key = (e["taskId"], e["repetition"])
        while found is not None and (found[0], found[1]) < key:
            found = next(pending, None)
        href = f"#{run_anchor(*key)}"
        if found is not None and (found[0], found[1]) == key:
            href, found = found[2], next(pending, None)
        yield {**e, "href": href}


def _task_view(t: dict[str, Any], links: list[dict[str, str]]) -> dict[str, Any]:
    flags = [f for f, on in (("flaky", t["flaky"]), ("low power", t["lowPower"])) if on]
    return {"id": t["taskId"], "anchor": task_anchor(t["taskId"]), "judged": t["judged"], "passes": t["passes"],
            "fails": t["fails"], "budget": t["budgetExceeded"], "errors": t["errors"],
            "rate": pct(t["successRate"]), "interval": interval(t["wilson95"]),
            "passAtK": pct(t["passAtK"]), "passHatK": pct(t["passHatK"]), "fp": t["falsePositives"],
            "fn": t["falseNegatives"],
            "cached": pct(t["cachedInputRatio"]), "flags": ", ".join(flags), "runs": links}


def _repetition_view(rep: dict[str, Any]) -> dict[str, Any]:
    rows = [("requested (k × tasks)", rep["requested"]), ("completed (records)", rep["completed"]),
            ("assessed (judged)", rep["assessed"]), ("invalid (errored)", rep["invalid"]),
            ("resolved (passed)", rep["resolved"]), ("all resolved", "yes" if rep["allResolved"] else "no"),
            ("score mean / min / max", " / ".join(num(rep[k], 3) for k in ("scoreMean", "scoreMin", "scoreMax"))),
            ("variable tasks", ", ".join(rep["variableTasks"]) or DASH),
            ("variable verifiers", ", ".join(f"{v['taskId']}/{v['verifierId']}"
                                             for v in rep["variableVerifiers"]) or DASH)]
    return {"rows": [(label, str(value)) for label, value in rows], "hasVerifiers": bool(rep["verifiers"]),
            "verifiers": ((v["taskId"], v["verifierId"], f"{v['passed']}/{v['assessed']}",
                           0 < v["passed"] < v["assessed"]) for v in rep["verifiers"])}


def _measured_view(m: dict[str, Any] | None, tokens: Chart | None, wall: Chart | None) -> dict[str, Any] | None:
    if m is None:
        return None
    missing = ", ".join(f"{r['taskId']} r{r['repetition']}" for r in m["runsMissingUsage"])
    tokens_unit, wall_unit = (c.unit if c is not None else None for c in (tokens, wall))
    return {"rows": [(label, num(m[key], digits)) for label, key, digits in MEASURED_ROWS if key in m],
            "omitted": (f"Token figures omitted: {m['runsJudged'] - m['runsReportingUsage']} of "
                        f"{m['runsJudged']} judged runs did not report usage ({missing}).")
            if m["usageIncomplete"] else None,
            "wallUnit": DASH if wall_unit is None else wall_unit.name,
            "tasks": ((t["taskId"], str(t["runsJudged"]), num(t.get("inputTokens")), num(t.get("outputTokens")),
                       num(t.get("tokensPerSuccess")), num(t["wallMsMedian"]), num(t["wallMsPerSuccess"]),
                       _five(t.get("tokensPerRun"), tokens_unit), _five(t.get("wallMsPerRun"), wall_unit))
                      for t in m["tasks"])}


def _five(spread: dict[str, Any] | None, unit: Unit | None) -> str:
    return DASH if unit is None else five_numbers(spread, unit)


def _estimated_view(e: dict[str, Any] | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"rows": estimated_rows(e), "note": pricing_note(e),
            "tasks": ((t["taskId"], f"{t['costUsd']:.4f}", num(t["costUsdPerSuccess"], 4)) for t in e["tasks"])}
