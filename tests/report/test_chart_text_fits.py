"""Every text of index.html's charts lies inside its SVG, whatever the counts and task ids: the layout is
computed from the texts (lab.report.layout), checked in-process for any texts and in Chromium with its fonts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.report import build_report
from lab.report.charts import SUITE, Chart, label_px, pass_k_chart, rate_chart, spread_chart, tokens_unit
from lab.report.html import render_html
from lab.report.layout import PAD_PX, cut, frame, text_px
from lab.report.layout import label_px as column
from tests.helpers.chromium import texts_outside_their_svg
from tests.helpers.records import make_header, make_record

MILLION = 1_000_000
LONGEST_ID = "W" * 128  # the suite schema's longest task id, of the widest letter
texts = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs", "Cc")), max_size=60)


def spans_of(f: Any, labels: list[tuple[str, bool]], values: list[str], inside: list[str], ticks: list[str],
             title: str, legend: str, axis_title: str) -> list[tuple[str, float, float]]:
    """(text, left, right) of every text as the templates anchor it, by the estimated widths."""
    spans = [(n, f.label_px - text_px(cut(n), bold=bold), f.label_px) for n, bold in labels]
    spans += [(v, f.value_x, f.value_x + text_px(v)) for v in values]
    spans += [(t, f.inside_x, f.inside_x + text_px(t)) for t in inside]
    spans += [(t, x - text_px(t) / 2, x + text_px(t) / 2) for t in ticks for x in (f.x0, f.x1)]
    spans += [(title, 0.0, text_px(title, bold=True)), (axis_title, f.axis_x - text_px(axis_title) / 2,
                                                        f.axis_x + text_px(axis_title) / 2)]
    if legend:
        spans.append((legend, f.legend_x, f.legend_x + text_px(legend)))
    return spans


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(texts, st.booleans()), max_size=6), st.lists(texts, max_size=6),
       st.lists(texts, max_size=3), st.lists(texts, min_size=1, max_size=6), texts, texts, texts,
       st.integers(40, 600))
def test_every_text_of_a_frame_lies_inside_it(labels: list[tuple[str, bool]], values: list[str], inside: list[str],
                                              ticks: list[str], title: str, legend: str, axis_title: str,
                                              plot_px: int) -> None:
    left = label_px_of(labels)
    f = frame(left, plot_px, ticks=ticks, values=values, inside=inside, title=title, legend=legend,
              axis_title=axis_title)
    for text, start, end in spans_of(f, labels, values, inside, ticks, title, legend, axis_title):
        assert start >= -1e-9 and end <= f.width + 1e-9, (text, start, end, f)
    assert f.label_px + PAD_PX <= f.x0 and f.value_x >= f.x1  # the label and value columns clear the plot
    if legend:
        assert f.legend_x >= max(f.x1, text_px(title, bold=True))  # the legend is right of the title and the plot


def label_px_of(labels: list[tuple[str, bool]]) -> float:
    return column((n for n, bold in labels if not bold), bold=[n for n, bold in labels if bold])


def fits(chart: Chart) -> None:
    """Every text of ``chart`` (its rows consumed) lies inside ``[0, chart.width]`` by the estimated widths."""
    f = chart.frame
    for row in chart.rows:
        assert f.label_px - text_px(row["label"], bold=row["suite"]) >= 0, row["label"]
        start = f.value_x if row["present"] else f.inside_x
        assert start + text_px(row["text"]) <= f.width, (row["text"], f)


task_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(task_ids, st.integers(0, 10 * MILLION), st.integers(0, 10 * MILLION)), min_size=1,
                max_size=4), st.integers(1, 10 * MILLION), st.floats(0, 1e13))
def test_every_chart_fits_its_texts(tasks: list[tuple[str, int, int]], k: int, tokens: float) -> None:
    blocks = [{"taskId": name, "judged": max(a, b), "passes": min(a, b), "errors": 0,
               "successRate": min(a, b) / max(a, b) if max(a, b) else None, "wilson95": None,
               "passAtK": 1.0 if min(a, b) else None, "passHatK": 0.0 if min(a, b) else None}
              for name, a, b in tasks]
    summary = {**blocks[0], "tasks": len(blocks)}
    left = label_px(b["taskId"] for b in blocks)
    fits(rate_chart(summary, blocks, left, replay=False))
    fits(pass_k_chart(summary, blocks, left, k))
    spread = {"runs": k, "min": 0.0, "q1": tokens / 4, "median": tokens / 2, "q3": tokens, "max": tokens,
              "exact": True}
    measured = [(b, {"tokensPerRun": spread} if b["judged"] else None) for b in blocks]
    chart = spread_chart("tokensPerRun", lambda: iter(measured), len(blocks), left)
    if any(b["judged"] for b in blocks):
        assert chart is not None and chart.unit == tokens_unit(tokens)
        fits(chart)


def test_the_label_column_holds_the_bold_suite_row() -> None:
    assert label_px(["a"]) >= text_px(SUITE, bold=True)


def huge_report() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A report whose counts are those of a million runs per task (the document's figures, not a million
    records), with the longest and widest task id, a long one of M's, and a task with nothing judged."""
    names = ["alpha", "M" * 40, LONGEST_ID]
    records = [make_record(n, r, wall_ms=10**9, tokens=(10**11, 10**10)) for n in names for r in range(3)]
    records += [make_record("errored", r, status="error") for r in range(2)]
    doc = build_report(make_header(k=3), records)
    doc["header"]["k"] = MILLION
    for block in [doc["summary"], *doc["tasks"]]:
        if block["judged"]:
            block["judged"], block["passes"] = MILLION, MILLION - 1
    for block in doc["measured"]["tasks"]:
        block["tokensPerRun"]["runs"] = block["wallMsPerRun"]["runs"] = MILLION
    return doc, records


@pytest.mark.slow
def test_chromium_draws_every_chart_text_inside_its_svg(tmp_path: Path) -> None:
    doc, records = huge_report()
    page = tmp_path / "index.html"
    page.write_text(render_html(doc, records), encoding="utf-8")
    text = page.read_text(encoding="utf-8")
    assert f"({MILLION - 1}/{MILLION} judged)" in text and f"n = {MILLION}" in text and cut(LONGEST_ID) in text
    assert texts_outside_their_svg(page.as_uri()) == []
