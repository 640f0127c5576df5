"""comparison.html: the picture beside comparison.md, checked in headless Chromium (screenshot and DOM):
the forest plot of per-task and aggregate differences, the verdicts, p-values, power line and links."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lab.compare.verdicts import compare_reports, write_comparison
from lab.schemas import load_schema
from tests.helpers.chromium import render, texts_outside_their_svg
from tests.helpers.reports import make_report


class Page(HTMLParser):
    """Elements by class and their data-* attributes, from the DOM Chromium serialised."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append({"tag": tag, **{k: v or "" for k, v in attrs}})

    def having(self, cls: str) -> list[dict[str, Any]]:
        return [e for e in self.elements if cls in str(e.get("class", "")).split()]


@pytest.fixture
def comparison(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    base = make_report({"steady": "PPPPP", "fell": "PPPPP", "rose": "FFFFF"}, config="base")
    cand = make_report({"steady": "PPPPP", "fell": "FFFFF", "rose": "PPPPP"}, config="cand", wall_ms=2000)
    doc = compare_reports(base, cand)
    reports = (tmp_path / "base-report", tmp_path / "cand-report")
    for d in reports:
        d.mkdir()
        (d / "index.html").write_text("<!DOCTYPE html><title>report</title>")
    write_comparison(tmp_path / "out", doc, reports=reports)
    return doc, tmp_path / "out"


def test_written_beside_the_json_and_markdown(comparison: tuple[dict[str, Any], Path]) -> None:
    doc, out = comparison
    jsonschema.validate(json.loads((out / "comparison.json").read_text()), load_schema("comparison"))
    text = (out / "comparison.html").read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text  # self-contained
    assert f'data-verdict="{doc["aggregate"]["verdict"]}"' in text


@pytest.mark.slow
def test_chromium_renders_verdicts_and_both_intervals_per_task(comparison: tuple[dict[str, Any], Path],
                                                               tmp_path: Path) -> None:
    doc, out = comparison
    url = (out / "comparison.html").as_uri()
    shot = tmp_path / "shot.png"
    dom = render(url, shot, (1000, 900))
    assert shot.is_file()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    page = Page()
    page.feed(dom)
    aggregate = [e for e in page.elements if e.get("id") == "aggregate-verdict"]
    # fell is regressed, rose improved, the mean did not move: inconclusive, and it says a task lost reliability
    assert [e["data-verdict"] for e in aggregate] == [doc["aggregate"]["verdict"]] == ["inconclusive"]
    rows = page.having("task")
    assert {r["data-task"]: r["data-verdict"] for r in rows} == {t["taskId"]: t["verdict"] for t in doc["tasks"]}
    intervals = page.having("interval")
    assert sorted(e["data-side"] for e in intervals) == sorted(["base", "cand"] * 3)
    deltas = page.having("delta")
    assert any(d["data-comparable"] == "true" for d in deltas)


def _num(element: dict[str, Any], key: str) -> float:
    return float(element[key])


@pytest.mark.slow
def test_chromium_draws_the_forest_plot(comparison: tuple[dict[str, Any], Path], tmp_path: Path,
                                       keep_artifact: Callable[[Path, str], None]) -> None:
    doc, out = comparison
    url = (out / "comparison.html").as_uri()
    shot = tmp_path / "forest.png"
    dom = render(url, shot, (1100, 1000))
    assert shot.is_file() and shot.stat().st_size > 10_000
    keep_artifact(shot, "comparison-forest.png")  # CI keeps the picture for a reader
    page = Page()
    page.feed(dom)
    forest = page.having("forest")
    assert [e["tag"] for e in forest] == ["svg"] and "forest plot" in forest[0]["aria-label"]
    rows = page.having("forest-row")
    tested = {t["taskId"]: t["verdict"] for t in doc["tasks"] if "difference" in t}
    assert {r["data-task"]: r["data-verdict"] for r in rows} == {**tested, "aggregate": "inconclusive"}
    # per task a line for the interval and a square for the estimate inside it; the aggregate a diamond
    lines, marks = page.having("ci"), page.having("estimate")
    assert len(lines) == len(rows) and len(marks) == len(tested)
    for line, mark in zip(lines, marks, strict=False):
        assert _num(line, "x1") <= _num(mark, "x") + 4 <= _num(line, "x2")
    assert len(page.having("diamond")) == 1 and page.having("diamond")[0]["tag"] == "polygon"
    zero, band = page.having("zero")[0], page.having("band")[0]
    fell, rose = (next(line for line, r in zip(lines, rows, strict=False) if r["data-task"] == name)
                  for name in ("fell", "rose"))
    assert _num(fell, "x2") < _num(zero, "x1") < _num(rose, "x1")  # fell entirely left of zero, rose right
    assert _num(band, "x") < _num(zero, "x1") < _num(band, "x") + _num(band, "width")  # ±tolerance around zero
    ticks = [e for e in page.elements if "tick" in str(e.get("class", "")).split()]
    assert len(ticks) == 7
    links = page.having("report-link")
    assert [(e["data-side"], e["href"]) for e in links] == [("base", "../base-report/index.html"),
                                                            ("cand", "../cand-report/index.html")]
    assert sorted(e["data-side"] for e in page.having("disclaimer")) == ["base", "cand"]  # scripted on both sides


@pytest.mark.slow
def test_chromium_draws_every_forest_text_inside_the_plot(tmp_path: Path) -> None:
    longest = "W" * 128  # the suite schema's longest task id, of the widest letter
    base = make_report({longest: "PPPPPPPPPP", "M" * 40: "FFFFFFFFFF", "short": "PPPPPFFFFF"}, config="base")
    cand = make_report({longest: "FFFFFFFFFF", "M" * 40: "PPPPPPPPPP", "short": "PPPPPFFFFF"}, config="cand")
    doc = compare_reports(base, cand)
    write_comparison(tmp_path, doc)
    page = tmp_path / "comparison.html"
    assert f'data-task="{longest}"' in page.read_text()  # the row keeps the whole id (its label is cut)
    assert texts_outside_their_svg(page.as_uri()) == []


def test_the_page_shows_p_values_and_the_power_line(comparison: tuple[dict[str, Any], Path]) -> None:
    doc, out = comparison
    text = (out / "comparison.html").read_text()
    fell = next(t for t in doc["tasks"] if t["taskId"] == "fell")
    assert f"p={fell['difference']['pValue']:.3g}, Holm p={fell['difference']['pAdjusted']:.3g}" in text
    assert "Power: with these runs" in text and "stratified permutation test, exact" in text


def test_a_replay_comparison_has_no_forest_plot(tmp_path: Path) -> None:
    doc = compare_reports(make_report({"a": "P"}, mode="replay"), make_report({"a": "F"}, mode="replay", config="c"))
    write_comparison(tmp_path, doc)
    assert 'class="forest"' not in (tmp_path / "comparison.html").read_text()
