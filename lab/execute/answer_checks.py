"""Verifiers over the agent's final answer: ``answer-contains`` and ``answer-matches``.

For tasks whose result is an answer, not a file ("which function raises?").
The answer is the final message of the run (the model's last reply without
tool calls); a run that ended without one (a budget stopped it) fails.

- ``answer-contains``: ``text`` (non-empty), optional ``ignoreCase`` (default
  false): the answer contains the text.
- ``answer-matches``: ``pattern``, a Python regular expression searched
  anywhere in the answer (``re`` syntax; ``(?i)`` for case-insensitive),
  matched under a time bound (:mod:`lab.patterns`): a pattern that backtracks
  past :data:`lab.patterns.MATCH_TIMEOUT_S` raises
  :class:`lab.patterns.PatternTimeout`, which makes the verifier ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lab import patterns

Outcome = tuple[str, str, dict[str, Any]]
EXCERPT_CHARS = 80


def check_answer_contains(spec: Mapping[str, Any], answer: str | None) -> Outcome:
    """pass when ``spec["text"]`` occurs in ``answer`` (case-folded with ``ignoreCase``).

    Raises:
        ValueError: ``text`` missing or not a non-empty string, or ``ignoreCase`` not a boolean.
    """
    text, ignore_case = spec.get("text"), spec.get("ignoreCase", False)
    if not isinstance(text, str) or not text:
        raise ValueError(f"field 'text': expected a non-empty string, got {text!r}")
    if not isinstance(ignore_case, bool):
        raise ValueError(f"field 'ignoreCase': expected true or false, got {ignore_case!r}")
    if answer is None:
        return "fail", "the agent gave no final answer", {}
    found = text.casefold() in answer.casefold() if ignore_case else text in answer
    verb = "contains" if found else "does not contain"
    return ("pass" if found else "fail"), f"the answer {verb} {_excerpt(text)!r}: {_excerpt(answer)!r}", \
        {"answerChars": len(answer)}


def check_answer_matches(spec: Mapping[str, Any], answer: str | None) -> Outcome:
    """pass when ``spec["pattern"]`` matches somewhere in ``answer``.

    Raises:
        ValueError: ``pattern`` missing, not a string, or not a valid regular expression.
        PatternTimeout: the search ran past ``lab.patterns.MATCH_TIMEOUT_S`` (names pattern and bound).
    """
    pattern = spec.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"field 'pattern': expected a non-empty string, got {pattern!r}")
    try:
        compiled = patterns.compile_pattern(pattern)
    except ValueError as exc:
        raise ValueError(f"field 'pattern': not a regular expression: {exc}") from None
    if answer is None:
        return "fail", "the agent gave no final answer", {}
    match = patterns.search(compiled, answer)
    if match is None:
        return "fail", f"the answer does not match /{_excerpt(pattern)}/: {_excerpt(answer)!r}", \
            {"answerChars": len(answer)}
    return "pass", f"the answer matches /{_excerpt(pattern)}/ at {_excerpt(match.group(0))!r}", \
        {"answerChars": len(answer)}


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS - 1] + "…"
