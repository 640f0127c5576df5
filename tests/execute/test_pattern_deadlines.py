"""User patterns (answer-matches, replayNormalize, claim_pattern, the search tool) are matched under a time bound.

A nested quantifier against a 40-character text backtracks for hours in
Python's ``re``; each place a user or model pattern is matched must instead
end at ``lab.patterns.MATCH_TIMEOUT_S`` with an error naming the pattern.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import patterns
from lab.agents.builtin.tool import ToolContext, run_tool
from lab.agents.builtin.tools import TOOLS
from lab.execute.verifiers import run_verifiers
from lab.replay.normalise import MaskRule
from lab.sandbox.process import minimal_env
from lab.sandbox.workspace import snapshot

BOUND_S = 0.05
REDOS = r"(a|aa)+$"  # the shape: alternatives that overlap under a repeat
ANSWER = "a" * 40 + "!"


@pytest.fixture
def short_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "MATCH_TIMEOUT_S", BOUND_S)


def test_answer_matches_with_a_backtracking_pattern_is_an_error_naming_it(tmp_path: Path,
                                                                          short_bound: None) -> None:
    started = time.monotonic()
    result = run_verifiers([{"id": "v", "kind": "answer-matches", "pattern": REDOS}], workspace=tmp_path,
                           baseline=snapshot(tmp_path), events=[], env={}, answer=ANSWER)[0]
    assert time.monotonic() - started < 1.0
    assert result.status == "error"
    assert "PatternTimeout" in result.detail and REDOS in result.detail and f"within {BOUND_S:g} s" in result.detail


def test_a_replay_rule_that_backtracks_raises_pattern_timeout(short_bound: None) -> None:
    rule = MaskRule.of(REDOS, "<x>", "replayNormalize[0]")
    with pytest.raises(patterns.PatternTimeout, match=re.escape(REDOS)):
        rule.apply(ANSWER)
    assert MaskRule.of(r"(\d+) ms", r"<\1> ms").apply("took 12 ms") == "took <12> ms"


def test_the_search_tool_stops_a_backtracking_pattern_as_a_tool_error(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.agents.builtin import tools

    monkeypatch.setattr(tools, "SEARCH_TIMEOUT_S", BOUND_S)
    (tmp_path / "a.txt").write_text((ANSWER + "\n") * 3)
    started = time.monotonic()
    result = run_tool(TOOLS["search"], {"pattern": REDOS}, ToolContext(tmp_path, minimal_env(tmp_path), 16_000,
                                                                        30_000, lambda: None))
    assert time.monotonic() - started < 1.0
    assert not result.ok and "did not finish within" in result.text and REDOS in result.text


def test_claim_pattern_that_backtracks_is_no_claim(short_bound: None) -> None:
    import dataclasses

    from lab.agents.command import CommandPreset

    preset = CommandPreset("p", "1", "chat", ("x",), (), (), "stdout_pattern", REDOS, 1000, "path",
                           None, None, (), ())
    assert preset.claims_success(0, ANSWER) is False
    assert dataclasses.replace(preset, claim_pattern=r"a!$").claims_success(0, ANSWER) is True


ATOMS = st.sampled_from(["a", "aa", "a?", "a*", "\\w", "[ab]", "."])
PATHOLOGICAL = st.builds(lambda x, y, outer, tail: f"(?:{x}|{y}){outer}{tail}", ATOMS, ATOMS,
                         st.sampled_from(["+", "*", "{2,}"]), st.sampled_from(["$", "b", "!b", ""]))


@settings(max_examples=25, deadline=None)
@given(PATHOLOGICAL, st.integers(min_value=0, max_value=40), st.sampled_from(["", "!", "b", "c"]))
def test_any_nested_quantifier_ends_within_its_bound_or_agrees_with_re(pattern: str, count: int,
                                                                       tail: str) -> None:
    text = "a" * count + tail
    compiled = patterns.compile_pattern(pattern)
    started = time.monotonic()
    try:
        found = patterns.search(compiled, text, timeout_s=BOUND_S)
    except patterns.PatternTimeout as exc:
        assert pattern in str(exc)
    else:
        if count <= 12:  # short enough for re to finish: the same semantics
            expected = re.search(pattern, text)
            assert (found.span() if found else None) == (expected.span() if expected else None)
    assert time.monotonic() - started < BOUND_S + 0.5


# -- compiling: counted repeats nested into gigabytes are refused before regex compiles them ----------

@pytest.mark.parametrize("pattern", ["((((a{100}){100}){100}){100})", "(?:a{65535}){65535}"])
def test_nested_counted_repeats_are_refused_before_compiling(pattern: str) -> None:
    start = time.process_time()
    with pytest.raises(ValueError, match="counted repeats nest to"):
        patterns.compile_pattern(pattern)
    assert time.process_time() - start < 1  # refused by the scan, not by running out of memory


@pytest.mark.parametrize("pattern", [r"\d{4}-\d{2}-\d{2}", "a{500}b{500}", "[{}]{3}", r"\{x\}{2}", "(ab){3,}"])
def test_ordinary_counted_repeats_still_compile(pattern: str) -> None:
    assert patterns.compile_pattern(pattern).pattern == pattern


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=4), st.sampled_from(["(", "(?:"]))
def test_the_repeat_product_of_nested_groups_is_the_product_of_their_counts(counts: list[int], opener: str) -> None:
    pattern = "a"
    for count in counts:
        pattern = f"{opener}{pattern}){{{count}}}"
    expected = 1
    for count in counts:
        expected *= count
    assert patterns.repeat_product(pattern) == expected
    refused = expected > patterns.MAX_REPEAT_PRODUCT
    try:
        patterns.compile_pattern(pattern)
    except ValueError as exc:
        assert refused and "counted repeats" in str(exc)
    else:
        assert not refused
