"""comparison.html: a picture for "better or worse?" beside comparison.md (SPEC K1–K3, K5).

Self-contained (inline CSS and SVG, no script, no external asset), so it opens
from a CI artifact. On top the paired aggregate verdict; per task the two 95 %
Wilson intervals drawn side by side on one 0–100 % axis, with the point
estimate and the verdict; then the deltas of tokens and time per success (a
delta marked not comparable shows its reason, never a number); the limits
last. Figures are formatted here; the template
(``templates/comparison.html.j2``, autoescaped) only lays them out.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from lab.compare.markdown import DELTA_ORDER, VERDICT_WORDS

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
AXIS_PX = 300
"""Width of the 0–100 % axis of each interval, in CSS pixels."""


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    return env.get_template("comparison.html.j2")


def render_comparison_html(doc: dict[str, Any]) -> str:
    """The HTML page of a comparison document from ``compare_reports`` (``comparison.schema.json``)."""
    base, agg = doc["base"], doc["aggregate"]
    page = {"title": f"Comparison — {base.get('suiteId')} {base.get('suiteVersion')}",
            "verdict": agg["verdict"], "verdictWord": VERDICT_WORDS[agg["verdict"]], "reason": agg["reason"],
            "aggregate": (f"{_pct(agg.get('base'))} → {_pct(agg.get('cand'))} "
                          f"(mean over {agg.get('pairedTasks')} paired task(s))") if "delta" in agg else None,
            "sides": [("base", base), ("cand", doc["cand"])],
            "axis": AXIS_PX, "tasks": [_task(t) for t in doc["tasks"]],
            "deltas": [_delta(name, doc["deltas"][name]) for name in DELTA_ORDER if name in doc["deltas"]],
            "warnings": list(doc["warnings"]), "limits": list(doc["limits"])}
    return _template().render(page=page)


def _task(task: dict[str, Any]) -> dict[str, Any]:
    return {"id": task["taskId"], "verdict": task["verdict"], "verdictWord": VERDICT_WORDS[task["verdict"]],
            "reason": task.get("reason") or "", "bars": [_bar("base", task.get("base")), _bar("cand", task.get("cand"))]}


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
    return {"name": f"{name} ({entry['unit']})", "base": fmt(entry.get("base")), "cand": fmt(entry.get("cand")),
            "delta": shown, "comparable": entry["comparable"]}


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * float(value):.1f} %"
