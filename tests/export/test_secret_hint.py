"""The scanner's one-search pre-check never hides a key shape the full scan would find.

``SecretScanner.findings`` asks the 18 detect-secrets plugins only about
lines where one combined pattern finds something, and a plugin only about
lines holding the literals its patterns require; these tests compare it
with the full scan (every plugin on every line) on text built to match each
pattern, embedded among other lines.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.export.key_shapes import SHAPES
from lab.export.secrets import EXTRA_SHAPES, PRIVATE_KEY_BLOCK, SK_KEY, SecretScanner, key_shape_plugins, may_hold_key

OWN = {pattern for _, pattern, _ in SHAPES}
PATTERNS = [p for plugin in key_shape_plugins() for p in plugin().denylist] + [
    SK_KEY, *(p for _, p in EXTRA_SHAPES if p not in OWN)]
BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]


def full_scan(scanner: SecretScanner, text: str) -> list[tuple[str, str]]:
    """Every plugin and shape on every line: the scan without the pre-check (escapes not looked through)."""
    found = {("Private Key", m.group(0)) for m in PRIVATE_KEY_BLOCK.finditer(text)}
    for line in text.splitlines() or [text]:
        found.update(scanner._line_findings(line, gated=False))
    return sorted(found)


def check_shape_in_text(pattern: re.Pattern[str], data: st.DataObject) -> None:
    shape = data.draw(st.from_regex(pattern, fullmatch=True), label="shape")
    before = data.draw(st.text(max_size=20), label="before")
    after = data.draw(st.text(max_size=20), label="after")
    glue = data.draw(st.sampled_from(["", " ", *BREAKS]), label="glue")
    text = before + glue + shape + glue + after
    scanner = SecretScanner(env={})
    assert may_hold_key(shape) or full_scan(scanner, shape) == []  # all it may skip is a look-alike
    assert scanner.text_findings(text) == full_scan(scanner, text)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_text_holding_any_shape_is_scanned_in_full(pattern: re.Pattern[str], data: st.DataObject) -> None:
    check_shape_in_text(pattern, data)


@pytest.mark.parametrize("pattern", sorted(OWN, key=lambda p: p.pattern), ids=lambda p: p.pattern[:40])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_text_holding_a_shape_of_our_own_is_scanned_in_full(pattern: re.Pattern[str], data: st.DataObject) -> None:
    """lab.export.key_shapes' patterns (four examples each: 46 patterns; each starts with a literal
    prefix or a case-insensitive word the pre-check holds as it is)."""
    check_shape_in_text(pattern, data)


@given(st.text(max_size=200))
@settings(max_examples=100, deadline=None)
def test_any_text_scans_as_in_full(text: str) -> None:
    scanner = SecretScanner(env={})
    assert scanner.text_findings(text) == full_scan(scanner, text)
