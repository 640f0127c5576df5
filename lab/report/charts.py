"""The pictures of index.html as inline SVG geometry: one row per task, on labelled axes.

Four charts, each a :class:`Chart` whose rows the template
``templates/_charts.html.j2`` draws (no script: the page reads the same in
any browser, and printed):

- :func:`rate_chart`: each task's success rate (the dot) and its 95 %
  Wilson interval (the error bar) on a 0–100 % axis, with passes / judged
  beside it; the first row is the whole suite. A replay has no intervals.
- :func:`pass_k_chart`: pass^k (square) and pass@k (dot) per task joined by
  a line — the longer the line, the less reliable the task — and the
  suite's figures (fractions of tasks) in the first row.
- :func:`spread_chart`: the distribution of a per-run figure per task
  (``measured.tasks[].tokensPerRun`` or ``wallMsPerRun``) as a box plot:
  whiskers from minimum to maximum, the box from the first to the third
  quartile, the median as a bar; on a linear axis from 0 with its unit. A
  task whose figure was not measured gets a sentence saying so, never a
  box at 0.

Nothing is computed here but geometry: every figure comes from the report
document. Each chart's :class:`~lab.report.layout.Frame` is computed from
the texts it draws (task labels, the texts beside the rows, tick labels,
title, legend), so none is cut off at the SVG's edge however long. Rows are generated from the document's lists (which may be
spools), so a chart of many tasks is never held whole; an axis that depends
on the data reads its list once more first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from lab.report.layout import Frame, cut, frame
from lab.report.layout import label_px as layout_label_px

ROW_PX = 22
TOP_PX = 34  # axis labels above the first row
BOTTOM_PX = 40  # axis labels and title below the last row
PLOT_PX = 280  # the plot area's width
PASS_K_PX = 180
SUITE = "all tasks"  # the first row's label (bold) in the rate and pass@k charts
ABSENT = ("nothing judged", "not measured")  # what a row without a figure says, inside the plot


@dataclass
class Chart:
    """One chart's frame (px) and its rows; ``rows`` is iterated once, by the template."""

    key: str
    title: str
    desc: str
    axis_title: str
    frame: Frame
    height: float
    ticks: list[tuple[float, str, str]]  # (x, label, value) of each vertical grid line
    rows: Iterable[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    unit: Unit | None = None  # a spread chart's unit
    legend: list[tuple[str, str, str]] = field(default_factory=list)  # (mark, colour, text) above the row texts

    @property
    def label_px(self) -> float:
        return self.frame.label_px

    @property
    def x0(self) -> float:
        return self.frame.x0

    @property
    def x1(self) -> float:
        return self.frame.x1

    @property
    def width(self) -> float:
        return self.frame.width

    @property
    def top(self) -> float:
        """Where the grid lines start (below the tick labels above the first row)."""
        return TOP_PX - 6

    @property
    def bottom(self) -> float:
        """Where the grid lines end (above the tick labels below the last row)."""
        return self.height - BOTTOM_PX + 6


def legend_text(legend: list[tuple[str, str, str]]) -> str:
    """The legend's text as the template writes it (each mark, a space, its text and a space)."""
    return "".join(f"{mark} {text} " if mark else f"{text} " for mark, _, text in legend)


def chart_frame(left: float, plot_px: float, ticks: list[str], values: Iterable[str], title: str,
                legend: list[tuple[str, str, str]], axis_title: str) -> Frame:
    """The frame of a chart with these texts (:func:`lab.report.layout.frame`; rows without a figure say
    one of :data:`ABSENT`)."""
    return frame(left, plot_px, ticks=ticks, values=values, inside=ABSENT, title=title,
                 legend=legend_text(legend), axis_title=axis_title)


def label_px(names: Iterable[str]) -> float:
    """Width (px) of the label column: the widest (cut) task name, or the suite's row label (bold)."""
    return layout_label_px(names, bold=[SUITE])


def row_y(index: int) -> float:
    """The vertical centre of row ``index`` (0 is the first)."""
    return TOP_PX + index * ROW_PX + ROW_PX / 2


def height(rows: int) -> float:
    return TOP_PX + rows * ROW_PX + BOTTOM_PX


@dataclass(frozen=True)
class Scale:
    """Fractions of the axis (0 at the left end, 1 at the right) to x positions (px, as text)."""

    x0: float
    plot_px: float = PLOT_PX

    def __call__(self, fraction: float) -> float:
        return round(self.x0 + self.plot_px * min(max(fraction, 0.0), 1.0), 2)


PERCENTS = (0, 25, 50, 75, 100)


def _percent_ticks(x: Scale) -> list[tuple[float, str, str]]:
    return [(x(v / 100), f"{v}%", str(v / 100)) for v in PERCENTS]


ESTIMATE, PASS_HAT_K = "#1d4ed8", "#d97706"  # the colours of the dots (rate, pass@k) and of pass^k's square


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def rate_chart(summary: dict[str, Any], tasks: Iterable[dict[str, Any]], left: float, replay: bool) -> Chart:
    """Success rate and Wilson interval per task (``tasks``: the report's ``tasks`` blocks, in order; ``left``:
    :func:`label_px` of their ids)."""
    title, axis_title = "Success rate per task", "success rate (passes / judged runs)" + (
        "" if replay else ", 95 % Wilson interval")
    legend = [("●", ESTIMATE, "rate"), ("", "", "(passes/judged)")]
    texts = (_rate_text(b) for b in chain([summary], tasks))
    f = chart_frame(left, PLOT_PX, [f"{v}%" for v in PERCENTS], (t for t in texts if t is not None), title, legend,
                    axis_title)
    x = Scale(f.x0)
    notes = ["A replay is deterministic: its rates have no sampling interval."] if replay else []
    return Chart(
        "rate", title,
        "Each task's success rate (passes / judged runs) as a dot"
        + ("" if replay else " with its 95 % Wilson interval as an error bar")
        + ", on a 0–100 % axis; the first row is the whole suite. The same figures are in the task table.",
        axis_title, f, height(int(summary["tasks"]) + 1), _percent_ticks(x), _rate_rows(x, summary, tasks), notes,
        legend=legend)


def _rate_rows(x: Scale, summary: dict[str, Any], tasks: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield _rate_row(x, 0, SUITE, summary, suite=True)
    for index, t in enumerate(tasks, start=1):
        yield _rate_row(x, index, t["taskId"], t, suite=False)


def _rate_text(block: dict[str, Any]) -> str | None:
    """The text beside a rate row; None when nothing was judged."""
    rate = block["successRate"]
    return None if rate is None else f"{_pct(rate)} ({block['passes']}/{block['judged']} judged)"


def _rate_row(x: Scale, index: int, name: str, block: dict[str, Any], suite: bool) -> dict[str, Any]:
    rate, bounds, judged, passes = block["successRate"], block["wilson95"], block["judged"], block["passes"]
    row: dict[str, Any] = {"y": row_y(index), "name": name, "label": cut(name), "suite": suite,
                           "judged": judged, "present": rate is not None, "point": None, "low": None, "high": None}
    if rate is None:
        row.update(text=ABSENT[0], title=f"{name}: nothing judged"
                   + (f" ({block['errors']} runs errored)" if block["errors"] else ""))
        return row
    row.update(point=x(rate), text=_rate_text(block),
               title=f"{name}: {_pct(rate)}, {passes} of {judged} judged runs passed")
    if bounds is not None:
        row.update(low=x(bounds[0]), high=x(bounds[1]))
        row["title"] += f"; 95% Wilson interval {_pct(bounds[0])} to {_pct(bounds[1])}"
    return row


def pass_k_chart(summary: dict[str, Any], tasks: Iterable[dict[str, Any]], left: float, k: int) -> Chart:
    """pass^k and pass@k per task, and the suite's (fractions of tasks that passed every time / at least once)."""
    title, axis_title = f"pass@k and pass^k per task (k = {k})", "pass^k and pass@k, k′ = min(k, judged runs)"
    legend = [("■", PASS_HAT_K, "pass^k /"), ("●", ESTIMATE, "pass@k")]
    texts = (_pass_k_text(b["passAtK"], b["passHatK"]) for b in chain([summary], tasks))
    f = chart_frame(left, PASS_K_PX, [f"{v}%" for v in PERCENTS], (t for t in texts if t is not None), title,
                    legend, axis_title)
    x = Scale(f.x0, PASS_K_PX)
    return Chart(
        "passk", title,
        "For each task, pass^k (square: every one of k runs passes) and pass@k (dot: at least one of k runs "
        "passes) on a 0–100 % axis, joined by a line: a long line is an unreliable task. The first row is the "
        "suite: the share of tasks that passed every judged run, and at least once. The same figures are in "
        "the task table.",
        axis_title, f, height(int(summary["tasks"]) + 1), _percent_ticks(x), _pass_k_rows(x, summary, tasks),
        legend=legend)


def _pass_k_rows(x: Scale, summary: dict[str, Any], tasks: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield _pass_k_row(x, 0, SUITE, summary["passAtK"], summary["passHatK"], suite=True)
    for index, t in enumerate(tasks, start=1):
        yield _pass_k_row(x, index, t["taskId"], t["passAtK"], t["passHatK"], suite=False)


def _pass_k_text(at_k: float | None, hat_k: float | None) -> str | None:
    """The text beside a pass@k row; None when nothing was judged."""
    return None if at_k is None or hat_k is None else f"{_pct(hat_k)} / {_pct(at_k)}"


def _pass_k_row(x: Scale, index: int, name: str, at_k: float | None, hat_k: float | None,
                suite: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"y": row_y(index), "name": name, "label": cut(name), "suite": suite,
                           "present": at_k is not None and hat_k is not None, "atK": None, "hatK": None}
    if at_k is None or hat_k is None:
        row.update(text=ABSENT[0], title=f"{name}: nothing judged")
        return row
    row.update(atK=x(at_k), hatK=x(hat_k), text=_pass_k_text(at_k, hat_k),
               title=f"{name}: pass^k {_pct(hat_k)}, pass@k {_pct(at_k)}"
               + (" (tasks that passed every judged run / at least once)" if suite else ""))
    return row


@dataclass(frozen=True)
class Unit:
    """How a per-run figure is shown: its unit's name, the figure's value of one unit, and a number format."""

    name: str
    scale: float
    fmt: Callable[[float], str]  # short, for ticks and the text beside a row

    def exact(self, value: float) -> str:
        """``value`` (in the figure's own unit: tokens, ms) in this unit, to 10 significant digits."""
        return f"{value / self.scale:.10g}"


def _tokens(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def _plain(value: float) -> str:
    return f"{value:.4g}"


def tokens_unit(high: float) -> Unit:
    """Tokens, with k / M / G suffixes (whatever ``high``)."""
    return Unit("tokens", 1.0, _tokens)


def wall_unit(high_ms: float) -> Unit:
    """For wall times up to ``high_ms``: milliseconds under 10 s, seconds under 20 minutes, minutes beyond."""
    if high_ms < 10_000:
        return Unit("ms", 1.0, _plain)
    if high_ms < 1_200_000:
        return Unit("s", 1000.0, _plain)
    return Unit("min", 60_000.0, _plain)


def nice_ticks(high: float, target: int = 5) -> list[float]:
    """Tick values 0, step, 2·step, … up to the first ≥ ``high``; step 1, 2, 2.5 or 5 × 10ⁿ (about ``target`` steps)."""
    if not high > 0 or not math.isfinite(high):
        return [0.0, 1.0]
    raw = high / target
    if raw < 1e-300:  # a subnormal high (hypothesis' 5e-324): high / target underflows towards 0
        return [0.0, high]
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(math.ceil(high / step - 1e-9) + 1)]


SPREADS: dict[str, tuple[str, str, Callable[[float], Unit], str]] = {
    "tokensPerRun": ("Tokens per run", "tokens per run (input + output, main loop)", tokens_unit,
                     "usage not reported by every judged run"),
    "wallMsPerRun": ("Wall time per run", "wall time per run ({unit})", wall_unit, "no wall time recorded"),
}
"""key → (title, axis, unit for the largest value, why a task has no box)."""

Pairs = Callable[[], Iterable[tuple[dict[str, Any], dict[str, Any] | None]]]


def spread_chart(key: str, tasks: Pairs, count: int, left: float) -> Chart | None:
    """The box plot of ``measured.tasks[][key]`` per task; None when no task has the figure.

    Args:
        key: ``tokensPerRun`` or ``wallMsPerRun``.
        tasks: makes an iterator of (task block, its measured block or None
            when nothing was judged), in task order; called four times.
        count: how many tasks.
        left: the label column's width (:func:`label_px` of the task ids).
    """
    title, axis, unit_of, absent = SPREADS[key]
    high = max((m[key]["max"] for _, m in tasks() if m is not None and key in m), default=None)
    if high is None:
        return None
    unit = unit_of(high)
    ticks = nice_ticks(high / unit.scale)
    axis_title, legend = axis.format(unit=unit.name), [("", "", "median · judged runs")]
    texts = (_spread_text(m[key], unit) for _, m in tasks() if m is not None and key in m)
    f = chart_frame(left, PLOT_PX, [unit.fmt(t) for t in ticks], texts, title, legend, axis_title)
    x = Scale(f.x0)
    top = ticks[-1] * unit.scale
    sketched = any(m is not None and key in m and not m[key]["exact"] for _, m in tasks())
    notes = ["Tasks of more than 10 000 judged runs: quartiles from a sketch, within 1 %."] if sketched else []
    return Chart(
        key, title,
        f"For each task, the {title.lower()} of its judged runs as a box plot: the whiskers span the minimum to "
        f"the maximum, the box the first to the third quartile, the bar inside it is the median; on a linear "
        f"axis from 0 ({unit.name}). The five numbers are in the Measured table.",
        axis_title, f, height(count), [(x(t * unit.scale / top), unit.fmt(t), f"{t * unit.scale:g}") for t in ticks],
        _spread_rows(x, key, tasks(), top, unit, absent), notes, unit=unit, legend=legend)


def _spread_text(spread: dict[str, Any], unit: Unit) -> str:
    """The text beside a box: the median in ``unit`` and how many runs."""
    return f"{unit.fmt(spread['median'] / unit.scale)} {unit.name} · n = {spread['runs']}"


def _spread_rows(x: Scale, key: str, tasks: Iterable[tuple[dict[str, Any], dict[str, Any] | None]], top: float,
                 unit: Unit, absent: str) -> Iterator[dict[str, Any]]:
    for index, (t, m) in enumerate(tasks):
        name = t["taskId"]
        spread = None if m is None else m.get(key)
        row: dict[str, Any] = {"y": row_y(index), "name": name, "label": cut(name), "suite": False,
                               "present": spread is not None, "box": None}
        if spread is None:
            why = ABSENT[0] if m is None else absent
            row.update(text=ABSENT[0] if m is None else ABSENT[1], title=f"{name}: {why}")
            yield row
            continue
        five = [spread[f] for f in FIVE]
        row["box"] = {f: x(v / top) for f, v in zip(FIVE, five, strict=True)}
        shown = [unit.fmt(v / unit.scale) for v in five]
        row.update(text=_spread_text(spread, unit),
                   title=f"{name}: {spread['runs']} judged runs; min {shown[0]}, first quartile {shown[1]}, "
                         f"median {shown[2]}, third quartile {shown[3]}, max {shown[4]} {unit.name}"
                         + ("" if spread["exact"] else " (quartiles within 1 %)"))
        yield row


FIVE = ("min", "q1", "median", "q3", "max")


def five_numbers(spread: dict[str, Any] | None, unit: Unit) -> str:
    """``min · q1 · median · q3 · max`` in ``unit`` (the table beside the chart); an em dash when absent."""
    if spread is None:
        return "—"
    return " · ".join(unit.exact(spread[f]) for f in FIVE)
