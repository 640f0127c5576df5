"""Scanning a long line for secrets costs one pass over it, whatever the line holds.

A provider answered ``"DONE: " + "z" * 98304`` and the run spent 14 s of CPU
redacting its record: the basic-auth pattern could start at every letter of
the run and scanned the rest of it each time. The kind is a key-shape
pattern (or the code around it) whose cost grows with the square of a line:
also detect-secrets' JWT, npm and OpenAI patterns on base64url text, URL-rich
lines and ``sk-`` runs, and one replacement pass per secret when a line holds
thousands. The tools are in :mod:`lab.export.linear_scan`; here the scanner
is checked whole on the lines that were slow, by counting the work each
pattern does on them (where it is tried), never by timing;
``benchmarks/secret_scan.py --set all`` times those lines and every repeated
unit at 100 KB and 800 KB.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import itertools
import json
import random
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.export.linear_scan import FIRST_START, FirstStartPattern, required_literals
from lab.export.secrets import EXTRA_SHAPES, SK_KEY, SecretScanner, key_shape_plugins
from tests.export.test_secret_hint import full_scan

PATTERNS = [p for plugin in key_shape_plugins() for p in plugin().denylist] + [SK_KEY, *(p for _, p in EXTRA_SHAPES)]
LITERALS = sorted({literal for p in PATTERNS for literal in required_literals(p)})
# What a long line may repeat: every literal a pattern needs, single characters and pairs of them.
UNITS = LITERALS + list("za0Z_-./:@ =+$\"'<>") + ["".join(pair) for pair in itertools.product("zA0/:-. ", repeat=2)]
LONG_ANSWER = "DONE: " + "z" * 98304  # the answer that took 14 s


def test_the_literals_of_known_patterns() -> None:
    npm = next(p for p in PATTERNS if "_authToken" in p.pattern)
    assert required_literals(npm) == ("//", "/:_authToken=")
    assert required_literals(re.compile(r"(?i)bearer\s+(\w+)")) == ()
    assert required_literals(re.compile(r"(?:ab|cd)x{3}")) == ()
    assert required_literals(re.compile(r"ab[0-9]+cd")) == ("ab", "cd")


def test_the_long_answer_is_left_as_it_is_with_no_hit() -> None:
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-not-in-the-answer-0123456789"})
    assert scanner.redact({"finalMessage": LONG_ANSWER}) == ({"finalMessage": LONG_ANSWER}, [])


# A pattern without required literals (case-insensitive ones, alternatives first) has nothing to check.
@pytest.mark.parametrize("pattern", [p for p in PATTERNS if required_literals(p)], ids=lambda p: p.pattern[:40])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_match_holds_the_required_literals(pattern: re.Pattern[str], data: st.DataObject) -> None:
    text = data.draw(st.from_regex(pattern), label="text")
    match = pattern.search(text)
    assert match is not None
    assert all(literal in match.group(0) for literal in required_literals(pattern))


@given(units=st.lists(st.sampled_from(UNITS), min_size=1, max_size=4), repeats=st.integers(1, 40),
       glue=st.sampled_from(["", " ", "\n", "x"]))
@settings(max_examples=100, deadline=None)
def test_repetitive_text_scans_as_in_full(units: list[str], repeats: int, glue: str) -> None:
    text = glue.join(units) * repeats
    scanner = SecretScanner(env={})
    assert scanner.text_findings(text) == full_scan(scanner, text)


def slow_lines(length: int) -> dict[str, str]:
    """Long lines real agents and providers produce, each with the shape that once made a pattern
    quadratic (``benchmarks/secret_scan.py --set real`` times them at 100 KB and 800 KB)."""
    rng = random.Random(7)

    def word(n: int) -> str:
        return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(n))

    cursor = base64.urlsafe_b64encode(json.dumps([{"i": i} for i in range(length // 12)]).encode()).decode()
    return {
        "jwt": "Decoded the cursor " + cursor[:length] + " and it was fine.",
        "npm": "https://example.org/a/b " * (length // 24) + "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
        "openai": "sk-" * (length // 3) + " T3BlbkFJ",
        "aws": " ".join("AKIA" + word(16) for _ in range(length // 21)),
        "basic-auth": " ".join(f"http://u{i}:pw{word(6)}@h{i}.example" for i in range(length // 30)),
        "one letter": "DONE: " + "z" * length,
        "URLs": "https://example.org/a/b " * (length // 24),
    }


class Counting:
    """A compiled pattern that counts how it is used: ``match`` is one attempt at one start;
    ``finditer``, ``findall`` and ``search`` try every start of the string (a spy around the real
    pattern, which still does all the matching)."""

    def __init__(self, compiled: re.Pattern[str]) -> None:
        self.compiled = compiled
        self.calls: collections.Counter[str] = collections.Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def match(self, string: str, pos: int = 0) -> re.Match[str] | None:
        self.calls["match"] += 1
        return self.compiled.match(string, pos)

    def search(self, string: str) -> re.Match[str] | None:
        self.calls["every start"] += 1
        return self.compiled.search(string)

    def finditer(self, string: str) -> Iterator[re.Match[str]]:
        self.calls["every start"] += 1
        return self.compiled.finditer(string)

    def findall(self, string: str) -> list[Any]:
        self.calls["every start"] += 1
        return self.compiled.findall(string)


def counting_scanner() -> tuple[SecretScanner, dict[str, Counting]]:
    """A scanner whose detect-secrets patterns count their use, by pattern text."""
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-not-in-any-line-0123456789"})
    counters: dict[str, Counting] = {}
    for plugin in scanner._plugins:
        wrapped: list[Any] = []
        for pattern in plugin.denylist:
            if isinstance(pattern, FirstStartPattern):
                counters[pattern.pattern] = Counting(pattern.compiled)
                wrapped.append(dataclasses.replace(pattern, compiled=counters[pattern.pattern]))
            else:
                counters[pattern.pattern] = Counting(pattern)
                wrapped.append(counters[pattern.pattern])
        plugin.denylist = wrapped
    return scanner, counters


FIRST_START_LINES = {"jwt": "eyJ", "npm": "//", "openai": "sk-"}
"""The line that made each :data:`FIRST_START` pattern quadratic, and the literal it starts at."""


@pytest.mark.parametrize("name", sorted(FIRST_START_LINES))
def test_a_pattern_that_may_start_anywhere_in_a_run_is_tried_once_per_run(name: str) -> None:
    """The JWT, npm and OpenAI patterns on the lines where each once took 20–30 s at 800 KB: the
    scanner tries each at a few starts, not at each of the starts the line holds, whose number
    grows with the line (work counted, not timed; benchmarks/secret_scan.py times the lines at
    100 KB and 800 KB)."""
    line = slow_lines(12_000)[name]
    start = FIRST_START_LINES[name]
    [source] = [source for source, (first, _) in FIRST_START.items() if first == start]
    scanner, counters = counting_scanner()
    redacted, _ = scanner.redact({"line": line})
    assert redacted == {"line": line}  # none of these lines holds a secret
    used = counters[source].calls
    assert used["every start"] == 0 and 1 <= used["match"] <= 10, used
    assert line.count(start) > 30


def test_a_pattern_whose_literals_a_line_lacks_is_not_run_on_it() -> None:
    """The answer that took 14 s (one letter) and a line of URLs: no detect-secrets pattern is run
    on the first (no key shape at all), npm's ``//.+/:_authToken=`` not on the second."""
    lines = slow_lines(12_000)
    scanner, counters = counting_scanner()
    scanner.redact({"line": lines["one letter"]})
    assert not any(c.calls for c in counters.values())
    scanner.redact({"line": lines["URLs"]})
    [npm] = [source for source, (first, _) in FIRST_START.items() if first == "//"]
    assert "/:_authToken=" in required_literals(re.compile(npm)) and not counters[npm].calls


def test_the_slow_lines_keep_only_their_secrets() -> None:
    """The two lines of distinct keys are secrets and are masked; the others hold none."""
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-not-in-any-line-0123456789"})
    changed = {name for name, line in slow_lines(3_000).items() if scanner.redact({"line": line})[0]["line"] != line}
    assert changed == {"aws", "basic-auth"}


@pytest.mark.parametrize("text", [
    "sk-" + "a1" * 20 + "AKIA1111111111111111" + "." + "AKIA2222222222222222",
    "sk-" + "a1" * 20 + "ghp_" + "A" * 36 + ".ghp_" + "B" * 36,
    "Bearer " + "x9" * 10 + "AKIA3333333333333333é AKIA4444444444444444",
])
def test_overlapping_secrets_are_all_masked(text: str) -> None:
    scanner = SecretScanner(env={})
    redacted, kinds = scanner.redact_text(text)
    assert kinds and "<secret:" in redacted
    for key in re.findall(r"AKIA\d{16}|ghp_[AB]{36}", text):
        assert key not in redacted and key[4:12] not in redacted, redacted


SHAPED = ["AKIA" + "7" * 16, "ghp_" + "Z" * 36, "sk-" + "a1" * 20, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2ln",
          "http://user:hunter2pass@host", "Bearer abcdefghij0123456789", ".", " ", "-", "x", "é", "=", "/"]


@given(st.lists(st.sampled_from(SHAPED), min_size=1, max_size=12))
@settings(max_examples=100, deadline=None)
def test_no_character_of_a_found_secret_survives(parts: list[str]) -> None:
    scanner = SecretScanner(env={})
    text = "".join(parts)
    redacted, _ = scanner.redact_text(text)
    for _, value in scanner.findings(text):
        assert value not in redacted, (value, redacted)
