"""Cap what any single field of a run record contributes to the files the lab writes.

A run record feeds ``runs/<task>/<run>.json``, ``runs.jsonl``, ``report.md``
and ``index.html``; one field (a final message, a tool call's arguments, a
server's error text) must not make them huge. Tool outputs are already cut
to ``agent.limits.tool_output_chars`` before the model sees them; every other
string is cut here, once, when the record is made.
"""

from __future__ import annotations

from typing import Any

FIELD_CHARS = 32_768


def cap_fields(value: Any, limit: int = FIELD_CHARS) -> Any:
    """``value`` with every string longer than ``limit`` characters cut to ``limit``.

    A cut string ends with ``… [cut: <n> chars in all]``. Dicts and lists are
    copied; keys are left alone; other values are returned as they are.

    Args:
        value: a JSON-able value (a run record).
        limit: the most characters kept of any one string (>= 1).
    """
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}… [cut: {len(value)} chars in all]"
    if isinstance(value, dict):
        return {k: cap_fields(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [cap_fields(v, limit) for v in value]
    return value
