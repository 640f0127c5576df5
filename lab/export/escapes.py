"""Text behind JSON string escapes, for the secret scanner (SPEC R4).

A key the lab writes may sit inside JSON that is itself a string: a tool
call's arguments (JSON) inside a stream event (JSON) inside a cassette line.
Escaped, ``aws_secret_access_key = \\"…\\"`` or a PEM block's ``\\n`` hide
the shape a pattern looks for. :func:`unescaped` gives the text with one,
two, three levels of escapes decoded, and :func:`spellings` how a value found
there is spelled in the original, so it can be masked in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
UNESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
ESCAPE_LEVELS = 3
"""Levels of JSON string escaping looked through: a tool call's arguments (JSON) inside a stream
event (JSON) inside a cassette line is two."""


def unescaped(text: str) -> Iterator[str]:
    """``text`` with 1, 2, … :data:`ESCAPE_LEVELS` levels of JSON string escapes decoded, while a
    level changes anything (nothing when ``text`` holds no backslash)."""
    for _ in range(ESCAPE_LEVELS):
        if "\\" not in text:
            return
        decoded = ESCAPE.sub(_unescape, text)
        if decoded == text:
            return
        text = decoded
        yield text


def spellings(value: str) -> list[str]:
    """``value`` as one and two levels of JSON string escaping write it (also with ``\\/``)."""
    once = json.dumps(value, ensure_ascii=False)[1:-1]
    twice = json.dumps(once, ensure_ascii=False)[1:-1]
    return list(dict.fromkeys([value, once, twice, once.replace("/", "\\/"), twice.replace("/", "\\\\/")]))


def _unescape(match: re.Match[str]) -> str:
    """One JSON string escape decoded (``\\n`` -> line break, ``\\u0041`` -> ``A``)."""
    code = match.group(1)
    if code[0] == "u":
        return chr(int(code[1:], 16))
    return UNESCAPES.get(code, code)
