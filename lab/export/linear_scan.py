"""Secret scanning that stays linear in the length of a line.

A record or cassette line can be long (a provider's answer, a file an agent
printed or wrote through a tool call's arguments), and a regex that may start
at every position of a line and scan the rest of it costs the square of the
line's length: a 98 KB answer once took 14 s to redact. Three tools keep the
scanner (:mod:`lab.export.secrets`) linear:

- :func:`required_literals`: the literals every match of a pattern contains;
  a line lacking one holds no match, which a substring test tells at once.
- :class:`FirstStartPattern`: for the detect-secrets patterns whose later
  starts within a run of characters can only find what the first start of
  that run finds (JWT, npm, OpenAI's legacy keys), only the first start of
  each run is tried. The matches are the pattern's own, in the same order.
- :func:`mask_spans`: every occurrence of every secret found is masked,
  overlapping occurrences as one span; many secrets are found in one
  Aho-Corasick pass (pyahocorasick) instead of one pass over the text each.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lab.export.credentials import MIN_CREDENTIAL_CHARS


@functools.lru_cache(maxsize=None)
def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """The literal strings every match of ``pattern`` contains: its top-level runs of plain characters.

    ``npm``'s ``//.+/:_authToken=…`` gives ``("//", "/:_authToken=")``; a
    case-insensitive pattern gives ``()``. Read from the pattern by the
    standard library's own regex parser (``re._parser``, once ``sre_parse``).
    """
    parser = importlib.import_module("re._parser")
    if pattern.flags & re.IGNORECASE:
        return ()
    runs, run = [], ""
    for op, argument in parser.parse(pattern.pattern, pattern.flags):
        if op is parser.LITERAL:
            run += chr(argument)
            continue
        runs.append(run)
        run = ""
    return tuple(r for r in [*runs, run] if r)


def may_match(pattern: re.Pattern[str] | FirstStartPattern, line: str) -> bool:
    """False when ``line`` lacks one of ``pattern``'s required literals (then it holds no match)."""
    compiled = pattern.compiled if isinstance(pattern, FirstStartPattern) else pattern
    return all(literal in line for literal in required_literals(compiled))


@dataclass(frozen=True)
class FirstStartPattern:
    """``compiled``, tried only at the first ``start`` literal of each maximal ``run`` of characters.

    Valid for a pattern whose match from a later start within a run is also
    a match from the run's first start (shown for each pattern of
    :data:`FIRST_START`): leftmost matching then gives the same matches as
    ``compiled.finditer``, with one attempt per run instead of one per start.
    Duck-types the parts of ``re.Pattern`` that detect-secrets and the
    scanner use: ``pattern``, ``flags``, ``groups``, ``finditer``, ``findall``.
    """

    compiled: re.Pattern[str]
    start: str
    run: re.Pattern[str]

    @property
    def pattern(self) -> str:
        return self.compiled.pattern

    @property
    def flags(self) -> int:
        return self.compiled.flags

    @property
    def groups(self) -> int:
        return self.compiled.groups

    def finditer(self, string: str) -> Iterator[re.Match[str]]:
        pos = 0
        for run in self.run.finditer(string):
            if run.end() <= pos:
                continue  # inside the last match
            at = string.find(self.start, max(run.start(), pos), run.end())
            if at < 0:
                continue
            match = self.compiled.match(string, at)
            if match is not None:
                yield match
                pos = match.end()

    def findall(self, string: str) -> list[Any]:
        """As ``re.Pattern.findall``: the whole matches, group 1, or tuples of every group."""
        if self.groups == 0:
            return [m.group(0) for m in self.finditer(string)]
        if self.groups == 1:
            return [m.group(1) or "" for m in self.finditer(string)]
        return [tuple(g or "" for g in m.groups()) for m in self.finditer(string)]


# detect-secrets 1.5 pattern → (first start literal, runs). Why a later start finds nothing more:
# - JWT: `eyJ[C]+\.` must reach the end of its run of C = [A-Za-z0-9_=-] ('.' is not in C); every
#   start in the run meets the same end, and the first has the most characters before it.
# - npm: `//.+/:_authToken=…` from the first `//` of a line reaches every `/:_authToken=` a later
#   `//` reaches (`.+` spans anything but a line break; lines are scanned one by one).
# - OpenAI legacy: `sk-[D]*…` lies within one run of D = [A-Za-z0-9_-]; `[D]*` from the first `sk-`
#   covers every position a later `sk-` of the run can start its key body from.
FIRST_START: Mapping[str, tuple[str, str]] = {
    r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?": ("eyJ", r"[A-Za-z0-9_=-]+"),
    r"\/\/.+\/:_authToken=\s*((npm_.+)|([A-Fa-f0-9-]{36})).*": ("//", r".+"),
    r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}": ("sk-", r"[A-Za-z0-9_-]+"),
}


def linear_denylist(denylist: Iterable[re.Pattern[Any]]) -> list[re.Pattern[Any] | FirstStartPattern]:
    """``denylist`` with each pattern of :data:`FIRST_START` tried at the first start of each run only."""
    out: list[re.Pattern[Any] | FirstStartPattern] = []
    for pattern in denylist:
        known = FIRST_START.get(pattern.pattern)
        out.append(FirstStartPattern(pattern, known[0], re.compile(known[1])) if known else pattern)
    return out


FEW_SECRETS = 16
"""Up to this many distinct secrets, each is found with ``str.find`` (one pass each, in C); more
go through one Aho-Corasick automaton (pyahocorasick)."""
AUTOMATON_MAX_CHARS = 1024
"""Longer secrets (private key blocks, long tokens) are found with ``str.find`` whatever their
number: pyahocorasick frees its trie recursively, one level per character, and a key of some
hundred thousand characters overflows the C stack; its pass over a text is also slow for a long
periodic key (``AKIA`` repeated)."""


def mask_spans(text: str, markers: Mapping[str, str]) -> str:
    """``text`` with every occurrence of every key of ``markers`` replaced by its marker.

    Occurrences that overlap become one span, replaced by the marker of the
    span's first occurrence (the longest at its start): no character of any
    secret survives. Linear in ``text`` for any number of secrets
    (:data:`FEW_SECRETS`).
    """
    found = sorted((start, -len(value), mark) for start, value, mark in _occurrences(text, markers))
    pieces, written, span_start, span_end, span_mark = [], 0, -1, -1, ""
    for start, negative_length, mark in found:
        end = start - negative_length
        if start < span_end:  # overlaps the current span: widen it
            span_end = max(span_end, end)
            continue
        if span_end >= 0:
            pieces += [text[written:span_start], span_mark]
            written = span_end
        span_start, span_end, span_mark = start, end, mark
    if span_end >= 0:
        pieces += [text[written:span_start], span_mark]
        written = span_end
    return "".join(pieces) + text[written:]


def _occurrences(text: str, markers: Mapping[str, str]) -> Iterator[tuple[int, str, str]]:
    """(start, value, marker) of every occurrence of every value, overlapping ones included."""
    short = {v: m for v, m in markers.items() if len(v) <= AUTOMATON_MAX_CHARS}
    by_find = markers if len(short) <= FEW_SECRETS else {v: m for v, m in markers.items() if v not in short}
    for value, mark in by_find.items():
        at = text.find(value)
        while at >= 0:
            yield at, value, mark
            at = text.find(value, at + 1)
    if by_find is markers:
        return
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for value, mark in short.items():
        automaton.add_word(value, (value, mark))
    automaton.make_automaton()
    for end, (value, mark) in automaton.iter(text):
        yield end + 1 - len(value), value, mark


def matched_values(denylist: Iterable[re.Pattern[str]], line: str) -> set[str]:
    """The text to replace for each match of a detect-secrets plugin's ``denylist`` in ``line``:
    its secret group, or the whole match.

    detect-secrets reports group 1 of its patterns, which for some shapes is
    only a prefix (``ghp``); a group shorter than 8 characters is taken as
    such a prefix and the whole match is replaced instead, extended to the
    end of its token. A match inside the token of the one before it adds
    nothing (that token is replaced whole), so a long token holding many
    matches costs one pass, not one per match.
    """
    values = set()
    for pattern in denylist:
        if not may_match(pattern, line):
            continue
        token_end = -1  # where the token of the last whole-token value ends
        for match in pattern.finditer(line):
            group = match.group(1) if pattern.groups else None
            if group and len(group) >= MIN_CREDENTIAL_CHARS:
                values.add(group)
            elif match.end() > token_end:  # the whole token: some patterns stop short of its end (a JWT's signature)
                token_end = match.end()
                while token_end < len(line) and (line[token_end].isalnum() or line[token_end] in "_.+/=-"):
                    token_end += 1
                values.add(line[match.start():token_end])
    return values
