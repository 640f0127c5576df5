"""The linear-time scanning helpers give exactly what the plain patterns and replacements give."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.export import linear_scan
from lab.export.linear_scan import FIRST_START, FirstStartPattern, linear_denylist, mask_spans
from lab.export.secrets import key_shape_plugins

# Pieces that make each FIRST_START pattern match, fail late, or start many times in one run.
PIECES = {
    "eyJ": ["eyJ", "a", "Z", "0", ".", "-", "_", "=", " ", "/", "+", "eyJhbGciOiJIUzI1NiJ9"],
    "//": ["//", "/", "/:_authToken=", "npm_", "ab12", "0123456789abcdef0123456789abcdef0123", "-", " ", ":",
           "${X}", "\t", "x"],
    "sk-": ["sk-", "T3BlbkFJ", "a", "Z", "0", "-", "_", " ", ".", "abcdefghij0123456789", "ABCDEFGHIJ9876543210"],
}


def first_start(start: str) -> FirstStartPattern:
    [wrapped] = [p for p in (linear_denylist([re.compile(source)])[0] for source in FIRST_START)
                 if isinstance(p, FirstStartPattern) and p.start == start]
    return wrapped


def test_every_rewritten_pattern_is_still_one_of_detect_secrets() -> None:
    installed = {p.pattern for plugin in key_shape_plugins() for p in plugin().denylist}
    assert set(FIRST_START) <= installed  # else an upgrade changed a pattern and it is no longer sped up


@pytest.mark.parametrize("start", sorted(PIECES))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_first_start_matches_equal_the_patterns_own(start: str, data: st.DataObject) -> None:
    wrapped = first_start(start)
    text = "".join(data.draw(st.lists(st.sampled_from(PIECES[start]), max_size=30), label="pieces"))
    assert [m.span() for m in wrapped.finditer(text)] == [m.span() for m in wrapped.compiled.finditer(text)]
    assert wrapped.findall(text) == wrapped.compiled.findall(text)


def masked_reference(text: str, markers: dict[str, str]) -> str:
    """Every occurrence found by brute force; overlapping occurrences merged; the first one's marker."""
    found = sorted((i, -len(v), m) for v, m in markers.items() for i in range(len(text)) if text.startswith(v, i))
    out, written, span = [], 0, None
    for start, negative, mark in found:
        end = start - negative
        if span and start < span[1]:
            span = (span[0], max(span[1], end), span[2])
            continue
        if span:
            out += [text[written:span[0]], span[2]]
            written = span[1]
        span = (start, end, mark)
    if span:
        out += [text[written:span[0]], span[2]]
        written = span[1]
    return "".join(out) + text[written:]


@pytest.mark.parametrize("few", [16, 0], ids=["str.find", "aho-corasick"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.text("abc", min_size=1, max_size=5), min_size=1, max_size=20, unique=True),
       text=st.text("abcx", max_size=60))
def test_mask_spans_equals_brute_force(few: int, values: list[str], text: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linear_scan, "FEW_SECRETS", few)  # the same value for every example
    markers = {v: f"<{i}>" for i, v in enumerate(values)}
    assert mask_spans(text, markers) == masked_reference(text, markers)


def test_a_very_long_secret_among_many_is_found_without_the_automaton() -> None:
    long_key = "AKIA" * 200_000  # the automaton's recursive free would overflow the stack on it
    markers = {f"key{i:02d}": "<k>" for i in range(40)} | {long_key: "<long>"}
    text = " ".join(markers) + " end"
    assert mask_spans(text, markers) == " ".join(["<k>"] * 40 + ["<long>", "end"])
