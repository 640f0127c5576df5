"""Regular expressions a user or a model wrote, matched under a time bound.

A pattern with nested quantifiers (``(a|aa)+$``) backtracks exponentially in
Python's :mod:`re`: 40 characters of answer keep a core busy for hours, and a
thread stuck inside ``re`` cannot be interrupted, so no deadline of the run
(``maxWallMs``) would end it. Every pattern from a suite (``answer-matches``,
``replayNormalize``), a preset (``command.claim_pattern``,
``command.normalise.rules``) or a model (the built-in ``search`` tool) is
therefore compiled and matched with the ``regex`` module
(https://pypi.org/project/regex/), whose matcher checks a ``timeout`` as it
backtracks and raises ``TimeoutError``; here that becomes
:class:`PatternTimeout`, naming the pattern and the bound.

Semantics: ``regex`` in its default ``VERSION0`` mode is compatible with
:mod:`re` (the syntax documented at https://docs.python.org/3/library/re.html,
inline flags such as ``(?i)``, look-around, back-references); it also accepts
a few additions of its own (possessive quantifiers ``a++``, atomic groups,
``\\p{…}``), which :mod:`re` 3.11+ partly shares. A pattern that does not
compile is refused where it is loaded (:func:`compile_pattern`).
"""

from __future__ import annotations

import regex

from lab.errors import LabError

MATCH_TIMEOUT_S = 1.0
"""Seconds of CPU time one search or sub of a user pattern may take (one text, one pattern).

``regex`` measures its timeout in the process's CPU time, so on a loaded host the wall time is
longer (measured: 4.3 s of wall time for 1 s of CPU at a load of 10 on 2 cores), but bounded."""

_SHOWN_CHARS = 60

Pattern = regex.Pattern[str]


class PatternTimeout(LabError):
    """A pattern did not finish matching within its time bound (catastrophic backtracking)."""


def compile_pattern(pattern: str, flags: int = 0) -> Pattern:
    """``pattern`` compiled with :mod:`regex` (``re``-compatible syntax, see the module docstring).

    Raises:
        ValueError: not a valid regular expression (the message says why and where), or its
            counted repeats multiply past :data:`MAX_REPEAT_PRODUCT` (compiling one such as
            ``((a{100}){100}){100}`` takes gigabytes before any text is matched).
    """
    product = repeat_product(pattern)
    if product > MAX_REPEAT_PRODUCT:
        raise ValueError(f"its counted repeats nest to {product:,} repetitions (at most "
                         f"{MAX_REPEAT_PRODUCT:,}): compiling it would take gigabytes; use + or * instead")
    try:
        return regex.compile(pattern, flags)
    except (regex.error, RecursionError, OverflowError, ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from None


MAX_REPEAT_PRODUCT = 100_000
"""The most repetitions counted repeats (``{n}``, ``{n,m}``) may nest to in one pattern."""

_COUNT = regex.compile(r"\{(\d*)(?:,(\d*))?\}")


def repeat_product(pattern: str) -> int:
    """The largest product of nested counted-repeat bounds in ``pattern`` (1 when it has none).

    A linear scan, not a parse: escapes and character classes are skipped,
    each group's weight is the largest weight inside it, and a ``{n,m}`` after an
    atom or group multiplies that atom's weight by ``max(n, m)`` (``{n,}`` by ``n``).
    Sequential repeats are not multiplied (``a{500}b{500}`` weighs 500).
    """
    stack = [1]  # the largest weight seen inside each open group
    last = 1  # the weight of the atom before the current position
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i, last = i + 2, 1
            continue
        if char == "[":  # a class is one atom: skip to its closing bracket
            j = i + 1
            if j < len(pattern) and pattern[j] == "^":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i, last = j + 1, 1
            continue
        if char == "(":
            stack.append(1)
        elif char == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] = max(stack[-1], last)
        elif char == "{":
            found = _COUNT.match(pattern, i)
            if found is not None and (found.group(1) or found.group(2)):
                bound = max(int(found.group(1) or 0), int(found.group(2) or 0))
                last *= max(bound, 1)
                stack[-1] = max(stack[-1], last)
                i = found.end()
                continue
            last = 1
        else:
            last = 1
        i += 1
    return max(stack)


def search(compiled: Pattern, text: str, *, timeout_s: float | None = None) -> regex.Match[str] | None:
    """``compiled.search(text)`` within ``timeout_s`` seconds (default :data:`MATCH_TIMEOUT_S`); the match or None.

    Raises:
        PatternTimeout: the search ran past ``timeout_s`` (names the pattern, the bound and the text's length).
    """
    timeout_s = MATCH_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        return compiled.search(text, timeout=timeout_s)
    except TimeoutError:
        raise PatternTimeout(_timeout_message(compiled, text, timeout_s)) from None


def sub(compiled: Pattern, replacement: str, text: str, *, timeout_s: float | None = None) -> str:
    """``compiled.sub(replacement, text)`` within ``timeout_s`` seconds (default :data:`MATCH_TIMEOUT_S`).

    Raises:
        PatternTimeout: the substitution ran past ``timeout_s``.
    """
    timeout_s = MATCH_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        return compiled.sub(replacement, text, timeout=timeout_s)
    except TimeoutError:
        raise PatternTimeout(_timeout_message(compiled, text, timeout_s)) from None


def shown(pattern: str) -> str:
    """``pattern`` as error messages quote it: at most 60 characters, on one line."""
    flat = pattern.replace("\n", "\\n")
    return flat if len(flat) <= _SHOWN_CHARS else flat[:_SHOWN_CHARS - 1] + "…"


def _timeout_message(compiled: Pattern, text: str, timeout_s: float) -> str:
    return (f"the pattern /{shown(compiled.pattern)}/ did not finish within {timeout_s:g} s of CPU time on a "
            f"{len(text)}-character text (catastrophic backtracking; "
            "rewrite it without nested quantifiers such as (a+)+)")
