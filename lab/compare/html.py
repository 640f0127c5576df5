"""comparison.html: a picture for "better or worse?" beside comparison.md (SPEC K1, K3, K5–K8).

Self-contained (inline CSS and SVG, no script, no external asset), so it opens
from a CI artifact. On top the aggregate verdict with its difference,
interval, p-value and the power line; then a **forest plot**: one row per
tested task with its difference cand − base and 95 % Newcombe interval, and
the aggregate (task-weighted mean, 95 % interval) as a diamond at the bottom,
on one axis from −100 to +100 points with the zero line and the ±tolerance
band; then the per-task table (both 95 % Wilson intervals drawn side by side,
raw and Holm-adjusted p-values, verdicts), the deltas of tokens and time per
success (a delta marked not comparable shows its reason, never a number),
links to both reports, and the limits last. A side measured with the
scripted provider gets the disclaimer that it measured no model. Figures are
formatted here; the template (``templates/comparison.html.j2``, autoescaped)
only lays them out.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from lab.compare.markdown import DELTA_ORDER, VERDICT_WORDS, aggregate_lines
from lab.report.layout import cut, frame, label_px
from lab.report.notes import SCRIPTED_NOTE

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
AXIS_PX = 300
"""Width of the 0–100 % axis of each Wilson interval, in CSS pixels."""
FOREST = {"plot": 480, "row": 22, "pad": 28}
"""Forest plot geometry in CSS pixels: plot width, row height, top/bottom padding (the label column is as wide as
the longest task id, cut as in index.html)."""
FOREST_TICKS = (-100, -50, -25, 0, 25, 50, 100)
AGGREGATE_LABEL = "aggregate (mean)"


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    return env.get_template("comparison.html.j2")


def render_comparison_html(doc: dict[str, Any], *, out_dir: Path | None = None,
                           reports: tuple[Path, Path] | None = None) -> str:
    """The HTML page of a comparison document from ``compare_reports`` (``comparison.schema.json``).

    Args:
        doc: the comparison document.
        out_dir: where the page is written (links are made relative to it).
        reports: the base and cand report directories, linked from the page
            (their ``index.html``, else ``report.json``); None links nothing.
    """
    base, agg = doc["base"], doc["aggregate"]
    page = {"title": f"Comparison — {base.get('suiteId')} {base.get('suiteVersion')}",
            "verdict": agg["verdict"], "verdictWord": VERDICT_WORDS[agg["verdict"]], "reason": agg["reason"],
            "figures": aggregate_lines(agg),
            "sides": [("base", base), ("cand", doc["cand"])],
            "scripted": [side for side, h in (("base", base), ("cand", doc["cand"]))
                         if h.get("provider") == "scripted"],
            "scriptedNote": SCRIPTED_NOTE,
            "links": _links(out_dir, reports),
            "forest": None if doc["replay"] else forest(doc),
            "axis": AXIS_PX, "tasks": [_task(t) for t in doc["tasks"]],
            "deltas": [_delta(name, doc["deltas"][name]) for name in DELTA_ORDER if name in doc["deltas"]],
            "warnings": list(doc["warnings"]), "limits": list(doc["limits"])}
    return _template().render(page=page)


def _links(out_dir: Path | None, reports: tuple[Path, Path] | None) -> list[dict[str, str]]:
    if reports is None:
        return []
    links = []
    for side, report_dir in zip(("base", "cand"), reports, strict=True):
        target = report_dir / "index.html"
        if not target.is_file():
            target = report_dir / "report.json"
        href = os.path.relpath(target, out_dir) if out_dir is not None else target.as_uri()
        links.append({"side": side, "href": Path(href).as_posix(), "text": str(report_dir.name)})
    return links


def forest(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Geometry of the forest plot: rows of tested tasks, the aggregate diamond, axis ticks, tolerance band.

    Every text lies inside ``[0, width]`` (:func:`lab.report.layout.frame`): the label column is as wide as
    the longest (cut) task id.
    """
    tested = [t for t in doc["tasks"] if t.get("difference") is not None]
    agg = doc["aggregate"]
    if not tested and "interval95" not in agg:
        return None
    ticks = [f"{v:+d}" if v else "0" for v in FOREST_TICKS]
    left = label_px((t["taskId"] for t in tested), bold=[AGGREGATE_LABEL] if "interval95" in agg else [])
    f = frame(left, FOREST["plot"], ticks=ticks)

    def x_of(points: float) -> float:
        """x of a difference (fraction, −1..1)."""
        return round(f.x0 + (points + 1) / 2 * FOREST["plot"], 1)

    rows: list[dict[str, Any]] = []
    for t in tested:
        diff = t["difference"]
        low, high = diff["newcombe95"]
        rows.append({"id": t["taskId"], "label": cut(t["taskId"]), "verdict": t["verdict"],
                     "y": FOREST["pad"] + len(rows) * FOREST["row"],
                     "x1": x_of(low), "x2": x_of(high), "cx": x_of(diff["estimate"]),
                     "title": (f"{t['taskId']}: {100 * diff['estimate']:+.1f} points, 95% CI "
                               f"[{100 * low:+.1f}, {100 * high:+.1f}], p={diff['pValue']:.3g}, "
                               f"Holm p={diff['pAdjusted']:.3g}, {VERDICT_WORDS[t['verdict']]}")})
    y_agg = FOREST["pad"] + len(rows) * FOREST["row"] + FOREST["row"] // 2
    aggregate = None
    if "interval95" in agg:
        low, high = agg["interval95"]
        cx, h = x_of(agg["delta"]), FOREST["row"] * 0.4
        aggregate = {"y": y_agg, "x1": x_of(low), "x2": x_of(high), "cx": cx, "verdict": agg["verdict"],
                     "points": f"{x_of(low)},{y_agg} {cx},{y_agg - h} {x_of(high)},{y_agg} {cx},{y_agg + h}",
                     "title": (f"aggregate: {100 * agg['delta']:+.1f} points, 95% CI [{100 * low:+.1f}, "
                               f"{100 * high:+.1f}], p={agg['pValue']:.3g}, {VERDICT_WORDS[agg['verdict']]}")}
    height = y_agg + FOREST["row"] + FOREST["pad"]
    tol = float(doc["tolerance"])
    return {"width": f.width, "height": height, "rows": rows, "aggregate": aggregate,
            "zero": x_of(0.0), "band": {"x": x_of(-tol), "width": round(x_of(tol) - x_of(-tol), 1)},
            "axisY": height - FOREST["pad"] + 4, "top": FOREST["pad"] - FOREST["row"] // 2,
            "ticks": [{"x": x_of(v / 100), "label": label} for v, label in zip(FOREST_TICKS, ticks, strict=True)],
            "labelX": f.label_px, "aggregateLabel": AGGREGATE_LABEL}


def _task(task: dict[str, Any]) -> dict[str, Any]:
    diff = task.get("difference")
    p_text = "" if diff is None else f"p={diff['pValue']:.3g}, Holm p={diff['pAdjusted']:.3g}"
    return {"id": task["taskId"], "verdict": task["verdict"], "verdictWord": VERDICT_WORDS[task["verdict"]],
            "reason": task.get("reason") or "", "p": p_text, "screen": task.get("screen", ""),
            "lost": task["lostReliability"],
            "bars": [_bar("base", task.get("base")), _bar("cand", task.get("cand"))]}


def _bar(side: str, figures: dict[str, Any] | None) -> dict[str, Any]:
    """Pixel geometry of one side's interval: x/width of the band, x of the point; None parts when unknown."""
    figures = figures or {}
    interval, rate = figures.get("wilson95"), figures.get("successRate")
    bar: dict[str, Any] = {"side": side, "label": f"{side}: {figures.get('passes', 0)}/{figures.get('judged', 0)}"}
    if interval:
        low, high = float(interval[0]), float(interval[1])
        bar.update(x=round(low * AXIS_PX, 1), width=max(round((high - low) * AXIS_PX, 1), 1.0),
                   text=f"{_pct(rate)} [{low:.3f}, {high:.3f}]")
    else:
        bar.update(x=None, width=None, text="no judged runs")
    bar["point"] = None if rate is None else round(float(rate) * AXIS_PX, 1)
    return bar


def _delta(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    def fmt(value: Any) -> str:
        return "—" if value is None else f"{value:.4g}"

    shown = (f"{entry['delta']:+.4g}" + (f" ({100 * entry['relative']:+.1f} %)" if "relative" in entry else "")
             if entry["comparable"] else f"not comparable: {entry.get('reason', '')}")
    bounds = entry.get("relative95")
    if entry["comparable"] and bounds:
        shown += f", 95% CI [{100 * bounds[0]:+.1f} %, {100 * bounds[1]:+.1f} %]"
    return {"name": f"{name} ({entry['unit']})", "base": fmt(entry.get("base")), "cand": fmt(entry.get("cand")),
            "delta": shown, "comparable": entry["comparable"]}


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * float(value):.1f} %"
