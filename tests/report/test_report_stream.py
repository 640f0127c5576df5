"""Reports streamed from record files: the in-memory bytes at every size, run pages past 1000 runs."""

from __future__ import annotations

import json
import random
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import LabError
from lab.files import copy_files, dumps_line, write_json
from lab.report import build_report, render_files, write_report, write_report_from_files
from lab.report.evidence import RUNS_PER_PAGE, run_anchor
from lab.report.lines import record_line
from lab.report.spool import ExternalSort, Spool
from tests.helpers.chromium import dump_dom
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid

STATUSES = ["pass", "pass", "pass", "fail", "budget_exceeded", "error"]


def records_for(runs: int, tasks: int = 7, seed: int = 1) -> list[dict[str, Any]]:
    """``runs`` records over ``tasks`` tasks: every status, usage or none, cached input or none, provider cost."""
    rng = random.Random(seed)
    records = []
    for i in range(runs):
        status = rng.choice(STATUSES)
        error = {"kind": "provider", "message": f"HTTP 503 on call {i}\nretried"} if status == "error" else None
        record = make_record(f"task-{i % tasks}", i // tasks, status=status, error=error,
                             tokens=None if rng.random() < 0.1 else (rng.randint(1, 9000), rng.randint(1, 900)),
                             wall_ms=rng.randint(100, 90_000), cached=rng.choice([None, 10]),
                             cached_partial=rng.random() < 0.05)
        if record["usage"] and rng.random() < 0.3:
            record["usage"]["providerCostUsd"] = rng.choice([0, 0.1, 0.2, 1e-7, 3.3])
        records.append(record)
    return records


def store(records: list[dict[str, Any]], root: Path) -> list[Path]:
    paths = []
    for record in records:
        path = root / record["taskId"] / f"s0-r{record['repetition']}.json"
        write_json(path, record)
        paths.append(path)
    random.Random(2).shuffle(paths)  # file order must not matter
    return paths


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


SMALL_PAGE = 20
"""Runs per page in the equality test below: the same paging code as at :data:`RUNS_PER_PAGE`, at a
fiftieth of the records (the 41 runs of three pages hold every status, a run without usage, provider
costs and partly reported cached tokens)."""


@pytest.mark.parametrize("runs", [0, 1, 15, SMALL_PAGE, SMALL_PAGE + 1, 2 * SMALL_PAGE + 1])
def test_streamed_report_equals_the_in_memory_one(tmp_path: Path, runs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import lab.report.evidence as evidence
    import lab.report.html as html

    for module in (evidence, html):
        monkeypatch.setattr(module, "RUNS_PER_PAGE", SMALL_PAGE)
    records = records_for(runs)
    if runs == 2 * SMALL_PAGE + 1:  # the three pages hold every kind of record a report shows differently
        assert {r["status"] for r in records} == set(STATUSES) and any(r["usage"] is None for r in records)
        assert any(r["usage"] and r["usage"]["cachedPartial"] for r in records)
        assert any(r["usage"] and "providerCostUsd" in r["usage"] for r in records)
    paths = store(records, tmp_path / "runs")
    header = make_header(k=max(1, runs // 7), rates=(1.0, 4.0))
    loaded = [json.loads(p.read_text()) for p in paths]
    write_report(tmp_path / "memory", build_report({**header, "voided": True}, loaded), loaded)
    kept = write_report_from_files(tmp_path / "streamed", header, [*paths, tmp_path / "runs" / "missing.json"])
    assert kept == runs
    assert tree(tmp_path / "streamed") == tree(tmp_path / "memory")
    assert_valid("report", json.loads((tmp_path / "streamed" / "report.json").read_text()), "report.json")
    assert (tmp_path / "streamed" / "pages").exists() == (runs > SMALL_PAGE)
    assert len(list((tmp_path / "streamed" / "pages").glob("runs-*.html"))) == (-(-runs // SMALL_PAGE) if runs > SMALL_PAGE else 0)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging or spool left


def test_long_lists_spill_to_disk_and_give_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lab.report.spool as spool

    records = records_for(48, tasks=16)  # 16 tasks and 48 runs: many times both limits below
    paths = store(records, tmp_path / "runs")
    header = make_header(k=3, rates=(1.0, 4.0))
    write_report_from_files(tmp_path / "big", header, paths)
    monkeypatch.setattr(spool, "SPOOL_ITEMS", 3)
    monkeypatch.setattr(spool, "SORT_ITEMS", 7)
    write_report_from_files(tmp_path / "small", header, paths)
    assert tree(tmp_path / "small") == tree(tmp_path / "big")


def test_records_of_other_inputs_and_missing_ones_void_the_report(tmp_path: Path) -> None:
    records = records_for(30)
    for record in records:
        record["inputs"] = {"taskId": record["taskId"], "repetition": record["repetition"], "harnessDigest": "b"}
    paths = store(records, tmp_path / "runs")
    expected = [json.loads(p.read_text())["inputs"] for p in paths]
    foreign = json.loads(paths[0].read_text())
    foreign["inputs"]["harnessDigest"] = "older"
    write_json(paths[0], foreign)
    kept = write_report_from_files(tmp_path / "r", make_header(k=5), paths, expected=expected)
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    assert kept == 29 and doc["header"]["voided"] is True and doc["repetition"]["completed"] == 29
    assert (foreign["taskId"], foreign["repetition"]) not in {(r["taskId"], r["repetition"]) for r in doc["runs"]}
    write_report_from_files(tmp_path / "all", make_header(k=5), paths[1:], expected=expected[1:])
    assert json.loads((tmp_path / "all" / "report.json").read_text())["header"]["voided"] is False


def test_a_record_file_that_is_not_json_is_named(tmp_path: Path) -> None:
    paths = store(records_for(3), tmp_path / "runs")
    paths[1].write_text("{not json", encoding="utf-8")
    with pytest.raises(LabError, match=f"{paths[1]}: not a readable JSON run record"):
        write_report_from_files(tmp_path / "r", make_header(), paths)
    assert not (tmp_path / "r").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_render_files_equal_the_written_files(tmp_path: Path) -> None:
    records = records_for(25)
    doc = build_report(make_header(k=4), records)
    write_report(tmp_path / "r", doc, records)
    assert render_files(doc, records) == {name: (tmp_path / "r" / name).read_text(encoding="utf-8")
                                          for name in render_files(doc, records)}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["a", "b", "schemaVersion", "Z", "é", "\ud800", "_"]), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(["schemaVersion", "taskId", "usage", "events", "z", "\udfff"]), JSON))
def test_a_record_line_is_dumps_line(record: dict[str, Any]) -> None:
    assert record_line(record) == dumps_line(record)


def test_a_spool_reads_back_what_was_appended_across_its_spill(tmp_path: Path) -> None:
    spool = Spool(tmp_path, limit=4)
    items = [{"n": n, "text": f"line {n}\nwith a break \ud800"} for n in range(10)]
    for item in items[:3]:
        spool.append(item)
    assert list(spool) == items[:3] and not list(tmp_path.iterdir())  # in memory so far
    for item in items[3:]:
        spool.append(item)
    assert list(tmp_path.iterdir()) and len(spool) == 10 and bool(spool)
    assert [x["n"] for x in spool] == list(range(10)) and list(spool) == items  # twice, same items
    outer = iter(spool)
    assert next(outer)["n"] == 0 and [x["n"] for x in spool][-1] == 9 and next(outer)["n"] == 1
    spool.close()
    assert not list(tmp_path.iterdir()) and not spool


def test_an_external_sort_merges_its_sorted_runs(tmp_path: Path) -> None:
    items = [[random.Random(n).choice("abc"), n % 13, n] for n in range(1000)]
    sorter = ExternalSort(tmp_path, limit=64)
    for item in items:
        sorter.add(item)
    assert list(sorter.sorted()) == sorted(items)
    sorter.close()


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))


def parsed(text: str) -> Links:
    links = Links()
    links.feed(text)
    return links


LARGE_TASKS, LARGE_K, LARGE_PAGE = 25, 5, 50
LARGE_RUNS = LARGE_TASKS * LARGE_K
"""The large report: 125 runs at 50 runs a page, so three run pages (first, middle and a partly
filled last one), as many as any count past two pages. The paging code is the same at any page size
(:func:`test_the_documented_page_size_is_the_one_paged_at` checks the real one, 1000, without a big
store); ``benchmarks/report_build.py`` measures 10k and 100k runs."""


def test_the_documented_page_size_is_the_one_paged_at() -> None:
    from lab.report.evidence import page_links, page_name, paged

    assert RUNS_PER_PAGE == 1000  # docs/reports.md: "more than 1000 runs … pages of 1000 runs"
    assert (paged(1000), paged(1001)) == (False, True)
    assert (page_name(999), page_name(1000)) == ("pages/runs-0001.html", "pages/runs-0002.html")
    assert page_links(2001) == [("pages/runs-0001.html", "runs 1–1000"), ("pages/runs-0002.html", "runs 1001–2000"),
                                ("pages/runs-0003.html", "runs 2001–2001")]


@pytest.fixture(scope="session")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 125-run report over 25 tasks at :data:`LARGE_PAGE` runs a page, built from its record files
    (read only by its tests).

    Session-scoped: a worker that runs tests of other modules between these
    would otherwise build it again for each stretch of them."""
    import lab.report.evidence as evidence
    import lab.report.html as html

    root = tmp_path_factory.mktemp("large")
    records = records_for(LARGE_RUNS, tasks=LARGE_TASKS)
    with pytest.MonkeyPatch.context() as patch:
        for module in (evidence, html):
            patch.setattr(module, "RUNS_PER_PAGE", LARGE_PAGE)
        write_report_from_files(root / "report", make_header(k=LARGE_K), store(records, root / "runs"))
    return root / "report"


@pytest.mark.xdist_group("large-report")  # one worker builds the large report for these tests
def test_a_large_report_pages_its_evidence_and_every_link_resolves(large_report: Path) -> None:
    pages = sorted((large_report / "pages").iterdir())
    assert [p.name for p in pages] == [f"runs-{n:04d}.html" for n in range(1, -(-LARGE_RUNS // LARGE_PAGE) + 1)]
    assert len(pages) == 3
    index = parsed((large_report / "index.html").read_text(encoding="utf-8"))
    assert not any(i.startswith("run-") for i in index.ids)  # the evidence is on the run pages
    targets = {f"pages/{p.name}": parsed(p.read_text(encoding="utf-8")) for p in pages}
    linked = [h for h in index.hrefs if h.startswith("pages/")]
    assert {h.partition("#")[0] for h in linked} == set(targets)
    for href in linked:
        page, _, anchor = href.partition("#")
        assert not anchor or anchor in targets[page].ids, href
    for name, page in targets.items():  # back to the index's task rows, to the neighbouring pages, to the attempts
        assert all(h.startswith("../index.html#task-") and h.partition("#")[2] in index.ids
                   or h == "../index.html" or f"pages/{h}" in targets
                   or h.startswith("../attempts/") and (large_report / h[3:]).is_file() for h in page.hrefs), name
    attempt_links = {h for p in targets.values() for h in p.hrefs if h.startswith("../attempts/")}
    assert len(attempt_links) == 2 * LARGE_RUNS  # each run's page and record, one link each
    errors = json.loads((large_report / "report.json").read_text())["errors"]
    errored = sum(r["status"] == "error" for r in records_for(LARGE_RUNS, tasks=LARGE_TASKS))
    run_links = [h for h in index.hrefs if "#run-" in h]  # the task rows' page links and the error table's
    assert len(errors) == errored > 10 and len(run_links) >= len(errors) and all(h.startswith("pages/") for h in run_links)
    assert {h.partition("#")[0] for h in run_links} == set(targets)  # errors and task rows link into every page
    assert sum(len([i for i in p.ids if i.startswith("run-")]) for p in targets.values()) == LARGE_RUNS


@pytest.mark.slow
@pytest.mark.xdist_group("large-report")
@pytest.mark.parametrize("page", ["index.html", "pages/runs-0001.html", "pages/runs-0003.html"])
def test_a_large_report_opens_in_headless_chromium(large_report: Path, page: str) -> None:
    dom = parsed(dump_dom((large_report / page).as_uri()))
    if page == "index.html":
        assert {"summary", "tasks", "runs", "task-task-0", f"task-task-{LARGE_TASKS - 1}"} <= dom.ids
        assert "pages/runs-0001.html" in dom.hrefs and "pages/runs-0003.html" in dom.hrefs
    else:
        first = (int(page[-9:-5]) - 1) * LARGE_PAGE  # report order: task ids sorted as text
        tasks = sorted(f"task-{n}" for n in range(LARGE_TASKS))
        assert run_anchor(tasks[first // LARGE_K], first % LARGE_K) in dom.ids
        assert "../index.html" in dom.hrefs
        assert len([i for i in dom.ids if i.startswith("run-")]) == min(LARGE_PAGE, LARGE_RUNS - first)


@pytest.mark.slow
def test_a_small_report_opens_in_headless_chromium_with_its_evidence(tmp_path: Path) -> None:
    records = records_for(40)
    write_report_from_files(tmp_path / "r", make_header(k=6), store(records, tmp_path / "runs"))
    dom = parsed(dump_dom((tmp_path / "r" / "index.html").as_uri()))
    assert {run_anchor(r["taskId"], r["repetition"]) for r in records} <= dom.ids
    assert all(h.startswith("#") or (tmp_path / "r" / h).is_file() for h in dom.hrefs)  # anchors or attempt files


@pytest.mark.xdist_group("large-report")
def test_out_copies_the_run_pages_too(large_report: Path, tmp_path: Path) -> None:
    copy_files(large_report, tmp_path / "out")
    assert tree(tmp_path / "out") == tree(large_report)


@pytest.mark.parametrize("runs", [0, 1, 60])
def test_the_figures_are_read_back_without_the_run_lines(tmp_path: Path, runs: int) -> None:
    from lab.report.jsondoc import load_document

    records = records_for(runs)
    write_report_from_files(tmp_path / "r", make_header(k=9), store(records, tmp_path / "runs"))
    whole = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert len(whole["runs"]) == runs
    assert load_document(tmp_path / "r" / "report.json", runs=False) == {k: v for k, v in whole.items() if k != "runs"}
    assert load_document(tmp_path / "r" / "report.json") == whole
