"""The closing table always says how many planned runs were not attempted, and why, and names the endpoint plainly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.report.closing import attempted_line
from lab.report.markdown import endpoint_text


def doc(requested: int, completed: int, voided: bool) -> dict[str, Any]:
    return {"header": {"voided": voided}, "repetition": {"requested": requested, "completed": completed}}


def test_all_attempted() -> None:
    assert attempted_line(doc(35, 35, False)) == "runs: 35 of 35 planned runs attempted"


def test_voided_eval_counts_the_rest_and_says_why() -> None:
    line = attempted_line(doc(35, 3, True))
    assert "3 of 35" in line and "32 not attempted" in line and "three infrastructure errors" in line


@given(st.integers(0, 500), st.integers(0, 500), st.booleans())
def test_counts_add_up(requested: int, completed: int, voided: bool) -> None:
    completed = min(completed, requested)
    line = attempted_line(doc(requested, completed, voided))
    assert f"{completed} of {requested}" in line
    assert (f"{requested - completed} not attempted" in line) == (completed < requested)


@pytest.mark.parametrize(("endpoint", "text"), [
    ({"provider": "cassette", "url": None, "key": "cassette"}, "cassettes (replay: no network)"),
    ({"provider": "scripted", "url": None, "key": "scripted"}, "scripted (no network)"),
    ({"provider": "openai", "url": "http://127.0.0.1:8000/v1", "key": "openai-1a2b3c4d"},
     "openai http://127.0.0.1:8000/v1 (key openai-1a2b3c4d)"),
    (None, "not recorded"),
])
def test_the_endpoint_reads_plainly(endpoint: dict[str, Any] | None, text: str) -> None:
    assert endpoint_text({"endpoint": endpoint} if endpoint else {}) == text
