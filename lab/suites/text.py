"""Text and numbers in suite.json, decided at load time (SPEC S2, S4).

- :func:`excerpt` quotes a value in an error line: at most ``EXCERPT_CHARS``
  characters, with the full length when cut, so a 400 KB value never
  becomes a 400 KB line.
- :func:`read_number` is the JSON float parser of the loader: an integral
  float (``1000.0``, ``1e3``) is read as the integer it equals (JSON Schema
  counts it as an integer too), so integer fields never meet a float at run
  time; non-finite numbers are refused.
- :func:`surrogate_problems` finds lone surrogates (``"\\ud800"`` in JSON),
  which are not Unicode text and cannot be written to any file or process.
"""

from __future__ import annotations

import math
import re
from typing import Any

EXCERPT_CHARS = 60
LINE_CHARS = 400
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
Problem = tuple[list[Any], str]


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)``, cut to about ``limit`` characters with its length: ``'abc…' (12,345 chars)``."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value):,} chars" if isinstance(value, str) else f"{len(text):,} chars as text"
    return f"{text[:limit]}… ({size})"


def name_in_line(name: str) -> str:
    """A suite or task id as the label of an error line: as written when short and printable,
    else as an :func:`excerpt` (quoted, control characters escaped, cut with its length)."""
    if len(name) <= EXCERPT_CHARS and name.isprintable():
        return name
    return excerpt(name)


def shorten(message: str, value: Any) -> str:
    """``message`` (a jsonschema message quoting ``value``) with the quote cut to an excerpt,
    and the whole line cut to ``LINE_CHARS`` as a last resort."""
    quoted = repr(value)
    if len(quoted) > EXCERPT_CHARS and quoted in message:
        message = message.replace(quoted, excerpt(value))
    return cut_line(message)


def cut_line(line: str) -> str:
    """``line`` cut to ``LINE_CHARS`` characters with its full length, when longer."""
    if len(line) > LINE_CHARS:
        return f"{line[:LINE_CHARS]}… ({len(line):,} chars)"
    return line


def decode_text(raw: bytes) -> str:
    """UTF-8 ``raw`` as Python's text mode reads a file: ``\\r\\n`` and ``\\r`` become ``\\n``.

    Raises:
        UnicodeDecodeError: ``raw`` is not UTF-8.
    """
    text = raw.decode("utf-8")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_number(text: str) -> float | int:
    """Parse a JSON number with a fraction or exponent; integral values become ints.

    Raises:
        ValueError: the number is out of range (``1e400``).
    """
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:EXCERPT_CHARS]} is out of range")
    return int(value) if value.is_integer() else value


def may_hold_surrogates(raw: bytes) -> bool:
    """Whether the JSON text ``raw`` escapes a surrogate (``\\udXXX``); only then is the
    parsed document walked by :func:`surrogate_problems` (UTF-8 itself cannot encode one)."""
    return _SURROGATE_ESCAPE.search(raw) is not None


def surrogate_problems(doc: Any) -> list[Problem]:
    """Every string (key or value) of ``doc`` holding a lone surrogate, by field path.

    Iterative and linear in the size of ``doc``.
    """
    problems: list[Problem] = []
    stack: list[tuple[list[Any], Any]] = [([], doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            found = _SURROGATE.search(value)
            if found:
                problems.append((path, f"text holds a lone surrogate (\\u{ord(found.group()):04x} at "
                                       f"offset {found.start()}): not valid Unicode"))
        elif isinstance(value, dict):
            for key, item in value.items():
                if _SURROGATE.search(key):
                    problems.append((path, f"key {excerpt(key)} holds a lone surrogate: not valid Unicode"))
                stack.append(([*path, key], item))
        elif isinstance(value, list):
            stack.extend(([*path, i], item) for i, item in enumerate(value))
    return problems
