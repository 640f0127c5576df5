"""Golden report files from a fixed set of records (review diffs; `pytest --update-golden` rewrites)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.report import build_report, write_report
from tests.helpers.golden import check_golden
from tests.helpers.records import make_header, make_record

GOLDEN_FILES = ("report.json", "report.md", "index.html", "junit.xml", "events.jsonl")


def golden_records(tmp_path: Path) -> list[dict]:
    """Every case a reader meets: steady, flaky with a false positive, failing, errored; cached partial."""
    return [
        make_record("steady", 0, tokens=(1200, 300), cached=600, wall_ms=900),
        make_record("steady", 1, tokens=(1000, 250), cached=400, wall_ms=1100),
        make_record("wobbly", 0, verdicts=[("tests", "pass", 3), ("scope", "pass", 1)], tokens=(2000, 400),
                    cached=500, wall_ms=2100),
        make_record("wobbly", 1, status="fail", claim="success", verdicts=[("tests", "fail", 3), ("scope", "pass", 1)],
                    tokens=(2600, 500), cached_partial=True, wall_ms=2500,
                    workspace=str(tmp_path / "work" / "wobbly" / "s1-r1")),
        make_record("broken", 0, status="budget_exceeded", tokens=(5000, 900), wall_ms=4000, turns=12),
        make_record("broken", 1, status="fail", claim="none", tokens=(3000, 700), wall_ms=3000),
        make_record("down", 0, status="error", tokens=None, wall_ms=50,
                    error={"kind": "provider", "message": "HTTP 503 from <endpoint> & retries exhausted"}),
        make_record("down", 1, tokens=(900, 100), wall_ms=800),
    ]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("golden")
    records = golden_records(tmp)
    doc = build_report(make_header(k=2, rates=(2.5, 10.0)), records)
    out = tmp / "reports" / "demo.cccccccccccc.k2.s0"
    write_report(out, doc, records)
    return out, tmp


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_report_file_matches_golden(request: pytest.FixtureRequest, published: tuple[Path, Path], name: str) -> None:
    out, tmp = published
    check_golden(request.config, f"report/{name}", (out / name).read_text(encoding="utf-8"), tmp_paths=(tmp,))
