"""Scanning a long line for secrets costs one pass over it, whatever the line holds.

A provider answered ``"DONE: " + "z" * 98304`` and the run spent 14 s of CPU
redacting its record: the basic-auth pattern could start at every letter of
the run and scanned the rest of it each time. The kind is a key-shape
pattern (or the code around it) whose cost grows with the square of a line:
also detect-secrets' JWT, npm and OpenAI patterns on base64url text, URL-rich
lines and ``sk-`` runs, and one replacement pass per secret when a line holds
thousands. The tools are in :mod:`lab.export.linear_scan`; here the scanner
is checked whole, on the lines that were slow and on every repeated unit.
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

from lab.export.linear_scan import required_literals
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
    assert scanner.text_findings(text) == full_scan(scanner, text)


SCAN_EVERY_LINE = textwrap.dedent("""
    import base64, json, random, string, sys
    from lab.export.secrets import SecretScanner

    units, length, long = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(7)

    def word(n, alphabet=string.ascii_uppercase + string.digits):
        return "".join(rng.choice(alphabet) for _ in range(n))

    # Long lines real agents and providers produce, each with the shape that once made a pattern quadratic.
    cursor = base64.urlsafe_b64encode(json.dumps([{"i": i} for i in range(long // 12)]).encode()).decode()
    lines = {
        "base64url JSON beside a dot (JWT)": "Decoded the cursor " + cursor[:long] + " and it was fine.",
        "URLs, then an npm token line": "https://example.org/a/b " * (long // 24)
                                        + "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
        "sk- runs, then the legacy marker": "sk-" * (long // 3) + " T3BlbkFJ",
        "distinct AWS key ids": " ".join("AKIA" + word(16) for _ in range(long // 21)),
        "distinct basic-auth URLs": " ".join(f"http://u{i}:pw{word(6)}@h{i}.example" for i in range(long // 30)),
        **{f"{unit!r} repeated": unit * (length // len(unit)) for unit in units},
    }
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-not-in-any-line-0123456789"})
    changed = 0
    for line in lines.values():
        redacted, _ = scanner.redact({"line": line})
        changed += redacted["line"] != line
    print(len(lines), changed)
""")


def test_long_lines_scan_in_linear_time() -> None:
    """Each repeated unit at 100 KB and each realistic line at 1.6 MB, in a child limited to 60 s of CPU.

    Linear scanning takes a few seconds for all of them. One quadratic
    pattern alone takes minutes at these lengths (the basic-auth shape took
    14 s at 98 KB; the JWT, npm and OpenAI patterns on their lines 20–30 s
    at 800 KB, four times that at 1.6 MB), so the limit tells the two apart
    with a wide margin and never measures speed.
    """
    import json

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))

    result = subprocess.run([sys.executable, "-c", SCAN_EVERY_LINE, json.dumps(UNITS), "100000", "1600000"],
                            capture_output=True, text=True, preexec_fn=limit_cpu, check=False)
    assert result.returncode == 0, f"killed by the CPU limit or failed: {result.returncode}\n{result.stderr}"
    scanned, changed = map(int, result.stdout.split())
    assert scanned == len(set(UNITS)) + 5
    # The two lines of distinct keys are secrets; repeating a literal rarely forms one ("AKIA" * 5 does).
    assert 2 <= changed < scanned // 4


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
@settings(max_examples=300, deadline=None)
def test_no_character_of_a_found_secret_survives(parts: list[str]) -> None:
    scanner = SecretScanner(env={})
    text = "".join(parts)
    redacted, _ = scanner.redact_text(text)
    for _, value in scanner.findings(text):
        assert value not in redacted, (value, redacted)
