"""A comparison says when its two reports ran their commands under different sandboxes."""

from __future__ import annotations

from lab.compare.verdicts import compare_reports
from tests.helpers.reports import make_report
from tests.helpers.schemas import assert_valid


def _pair(base_sandbox: str | None, cand_sandbox: str | None) -> list[str]:
    base, cand = make_report({"t": "PPPPP"}), make_report({"t": "PPPPF"}, config="cand")
    for report, sandbox in ((base, base_sandbox), (cand, cand_sandbox)):
        if sandbox is not None:
            report["header"]["sandbox"] = sandbox
    doc = compare_reports(base, cand)
    assert_valid("comparison", doc, "comparison")
    return [w for w in doc["warnings"] if "sandboxes" in w]


def test_different_sandboxes_are_named_in_a_warning() -> None:
    assert _pair("bwrap", "none") == [
        "different sandboxes (base bwrap, cand none): commands ran with different isolation, "
        "a changed verdict may come from it"]


def test_a_report_without_the_sandbox_condition_is_named_as_not_recorded() -> None:
    assert _pair(None, "bwrap") == [
        "different sandboxes (base not recorded, cand bwrap): commands ran with different "
        "isolation, a changed verdict may come from it"]


def test_the_same_sandbox_raises_no_warning() -> None:
    assert _pair("bwrap", "bwrap") == [] and _pair(None, None) == []
