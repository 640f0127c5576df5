"""Scanning a long line for secrets costs one pass over it, whatever the line repeats.

A provider answered ``"DONE: " + "z" * 98304`` and the run spent 14 s of CPU
redacting its record: the basic-auth pattern could start at every letter of
the run and scanned the rest of it each time. The kind is a key-shape
pattern (or the code around it) whose cost grows with the square of a line.
The scanner now asks a pattern only about lines holding every literal each
of its matches contains (:func:`required_literals`), its own patterns start
at a fixed literal, and a long token with many matches is extended once.
"""

from __future__ import annotations

import itertools
import re
import resource
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.export.secrets import EXTRA_SHAPES, SK_KEY, SecretScanner, key_shape_plugins, required_literals
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


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_match_holds_the_required_literals(pattern: re.Pattern[str], data: st.DataObject) -> None:
    text = data.draw(st.from_regex(pattern), label="text")
    match = pattern.search(text)
    assert match is not None
    assert all(literal in match.group(0) for literal in required_literals(pattern))


@given(units=st.lists(st.sampled_from(UNITS), min_size=1, max_size=4), repeats=st.integers(1, 40),
       glue=st.sampled_from(["", " ", "\n", "x"]))
@settings(max_examples=300, deadline=None)
def test_repetitive_text_scans_as_in_full(units: list[str], repeats: int, glue: str) -> None:
    text = glue.join(units) * repeats
    scanner = SecretScanner(env={})
    assert scanner.findings(text) == full_scan(scanner, text)


SCAN_EVERY_UNIT = textwrap.dedent("""
    import json, sys
    from lab.export.secrets import SecretScanner
    units, length = json.loads(sys.argv[1]), int(sys.argv[2])
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-not-in-any-line-0123456789"})
    changed = 0
    for unit in units:
        line = unit * (length // len(unit))
        redacted, _ = scanner.redact({"line": line})
        changed += redacted["line"] != line
    print(len(units), changed)
""")


def test_long_repetitive_lines_scan_in_linear_time() -> None:
    """Every unit repeated to 100 KB, in a child limited to 60 s of CPU.

    Linear scanning takes about a second for all of them; one quadratic
    pattern alone takes minutes at this length (14 s at 98 KB), so the
    limit tells the two apart with a wide margin and never measures speed.
    """
    import json

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))

    result = subprocess.run([sys.executable, "-c", SCAN_EVERY_UNIT, json.dumps(UNITS), "100000"],
                            capture_output=True, text=True, preexec_fn=limit_cpu, check=False)
    assert result.returncode == 0, f"killed by the CPU limit or failed: {result.returncode}\n{result.stderr}"
    scanned, changed = map(int, result.stdout.split())
    assert scanned == len(UNITS)
    # Repeating a literal never forms a secret, except a few shapes (e.g. "AKIA" * 5 is an AWS key id).
    assert changed < scanned // 4
