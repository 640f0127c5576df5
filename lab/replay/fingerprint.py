"""JSON equality for recorded and live requests: number canonicalisation and fingerprints.

Two requests are the same request when they are equal as JSON values, not as
Python objects or bytes: ``1`` and ``1.0`` are the same JSON number (a
client library may send ``temperature: 1.0`` where the recording holds
``temperature: 1``), while ``true`` and ``1`` stay different (JSON booleans
are not numbers, although Python's ``True == 1``).

Used by the cassette Replayer and written so any other matcher of recorded
traffic (a gateway) can reuse it.
"""

from __future__ import annotations

import math
from typing import Any

from lab.canonical import canonical_hash


def canonical_numbers(value: Any) -> Any:
    """``value`` with every integral finite float turned into the equal int, at any depth.

    Booleans are kept as booleans; non-integral floats, NaN and infinities are
    kept as they are; object keys are untouched.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: canonical_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [canonical_numbers(item) for item in value]
    return value


def json_equal(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are the same JSON value (``1 == 1.0``, ``true != 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


def fingerprint(normalised_request: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a normalised request, numbers canonicalised.

    Requests that are :func:`json_equal` have the same fingerprint.
    """
    return canonical_hash(canonical_numbers(normalised_request))


EXCERPT_CHARS = 40
"""Characters of context on each side of the first difference in a divergence message."""


def string_excerpts(a: str, b: str) -> tuple[str, str]:
    """Short excerpts of two strings around their first differing character (``…`` where cut)."""
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    start = max(0, i - EXCERPT_CHARS)
    return _clip(a, start, i), _clip(b, start, i)


def _clip(s: str, start: int, at: int) -> str:
    end = at + EXCERPT_CHARS
    return ("…" if start > 0 else "") + s[start:end] + ("…" if end < len(s) else "")
