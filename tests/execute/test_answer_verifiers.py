"""Verifiers over the agent's final answer (answer-contains, answer-matches), through run_verifiers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.execute.verifiers import run_verifiers
from lab.sandbox.workspace import snapshot


def verify(tmp_path: Path, spec: dict[str, Any], answer: str | None) -> tuple[str, str]:
    result = run_verifiers([{"id": "v", **spec}], workspace=tmp_path, baseline=snapshot(tmp_path), events=[],
                           env={}, answer=answer)[0]
    return result.status, result.detail


@pytest.mark.parametrize(("spec", "answer", "status"), [
    ({"kind": "answer-contains", "text": "parse_line"}, "DONE: parse_line raises ValueError", "pass"),
    ({"kind": "answer-contains", "text": "Parse_Line"}, "DONE: parse_line raises", "fail"),
    ({"kind": "answer-contains", "text": "Parse_Line", "ignoreCase": True}, "DONE: parse_line raises", "pass"),
    ({"kind": "answer-contains", "text": "x"}, None, "fail"),
    ({"kind": "answer-matches", "pattern": r"\b42\b"}, "The answer is 42.", "pass"),
    ({"kind": "answer-matches", "pattern": r"\b42\b"}, "The answer is 420.", "fail"),
    ({"kind": "answer-matches", "pattern": r"(?i)^done:"}, "Done: yes", "pass"),
    ({"kind": "answer-matches", "pattern": "x"}, None, "fail"),
])
def test_answer_verdicts(tmp_path: Path, spec: dict[str, Any], answer: str | None, status: str) -> None:
    assert verify(tmp_path, spec, answer)[0] == status


@pytest.mark.parametrize("spec", [{"kind": "answer-matches", "pattern": "("},
                                  {"kind": "answer-contains", "text": ""},
                                  {"kind": "answer-contains", "text": "a", "ignoreCase": "yes"}])
def test_a_bad_spec_is_an_error_naming_the_field(tmp_path: Path, spec: dict[str, Any]) -> None:
    status, detail = verify(tmp_path, spec, "anything")
    assert status == "error" and "field '" in detail


def test_no_answer_says_so(tmp_path: Path) -> None:
    assert verify(tmp_path, {"kind": "answer-contains", "text": "x"}, None) == ("fail", "the agent gave no final answer")


@given(st.text(min_size=1, max_size=30), st.text(max_size=30), st.text(max_size=30))
def test_contains_agrees_with_python_in(text: str, before: str, after: str) -> None:
    from lab.execute.answer_checks import check_answer_contains, check_answer_matches

    answer = before + text + after
    assert check_answer_contains({"text": text}, answer)[0] == "pass"
    assert check_answer_matches({"pattern": re.escape(text)}, answer)[0] == "pass"
    assert check_answer_contains({"text": text}, before)[0] == ("pass" if text in before else "fail")
