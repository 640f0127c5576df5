"""report.json written in chunks: the bytes of ``lab.files.dumps_json``, with lists read from spools as written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from lab.files import encodable, ordered
from lab.report.spool import Spool

INDENT = "  "


def iter_dumps_json(value: Any) -> Iterator[str]:
    """``dumps_json(materialise(value))`` in chunks, never holding a spool's items at once.

    Dicts have their keys sorted (``schemaVersion`` first) and 2-space
    indentation, as :func:`lab.files.dumps_json` writes them; each item of a
    list or :class:`~lab.report.spool.Spool` is one chunk.
    """
    yield from _chunks(value, 0)
    yield "\n"


def _chunks(value: Any, level: int) -> Iterator[str]:
    inner = "\n" + INDENT * (level + 1)
    if isinstance(value, dict):
        if not value:
            yield "{}"
            return
        for n, key in enumerate(sorted(value, key=lambda k: (k != "schemaVersion", k))):
            yield ("{" if n == 0 else ",") + inner + json.dumps(encodable(key), ensure_ascii=False) + ": "
            yield from _chunks(value[key], level + 1)
        yield "\n" + INDENT * level + "}"
    elif isinstance(value, (list, tuple, Spool)):
        empty = True
        for item in value:
            yield ("[" if empty else ",") + inner
            empty = False
            if not isinstance(value, Spool) and _holds_spool(item):  # a spool's items are plain JSON
                yield from _chunks(item, level + 1)
            else:  # a whole item at once: its newlines are indentation only (strings escape theirs)
                yield json.dumps(ordered(item), indent=2, ensure_ascii=False).replace("\n", inner)
        yield "[]" if empty else "\n" + INDENT * level + "]"
    else:
        yield json.dumps(ordered(value), ensure_ascii=False)


def _holds_spool(value: Any) -> bool:
    if isinstance(value, Spool):
        return True
    if isinstance(value, dict):
        return any(_holds_spool(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_spool(v) for v in value)
    return False
