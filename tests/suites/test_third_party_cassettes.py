"""Cassettes of a suite outside the checkout live with that suite, never in the lab's cassettes/."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import paths
from lab.suites.load import load_suite
from lab.suites.source import cassette_root
from tests.suites.test_suite_source import records, run_lab, write_suite


def test_roots_by_where_the_suite_lives(tmp_path: Path) -> None:
    assert cassette_root(paths.SUITES_DIR / "core", None) == paths.CASSETTES_DIR
    assert cassette_root(tmp_path / "ext", None) == tmp_path / "ext" / "cassettes"
    assert cassette_root(tmp_path / "ext", str(tmp_path / "c")) == tmp_path / "c"


def test_recordings_inside_the_suite_do_not_change_its_digest(tmp_path: Path) -> None:
    suite_dir = write_suite(tmp_path / "suites")
    before = load_suite(suite_dir).digest
    (suite_dir / "cassettes" / "ext").mkdir(parents=True)
    (suite_dir / "cassettes" / "ext" / "t.jsonl").write_text("{}\n")
    assert load_suite(suite_dir).digest == before


@pytest.mark.slow
def test_record_then_replay_a_third_party_suite(tmp_path: Path) -> None:
    suite_dir = write_suite(tmp_path / "suites")
    common = [f"suite_dir={tmp_path / 'suites'}", "suite=ext", "yes=true"]
    recorded = run_lab(["doit", "record", *common, "provider=scripted"], tmp_path / "runs")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert sorted(p.name for p in (suite_dir / "cassettes" / "ext").glob("*.jsonl"))
    assert not (paths.CASSETTES_DIR / "ext").exists()
    replayed = run_lab(["doit", "eval", *common, "mode=replay"], tmp_path / "runs")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert len(records(tmp_path / "runs")) == 2
