"""report.json written in chunks (the bytes of ``lab.files.dumps_json``, lists read from spools), and read back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab.files import encodable, loads_json, open_text, ordered, read_text
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


def load_document(path: Path, *, runs: bool = True) -> dict[str, Any]:
    """A report.json document as written by the lab; ``runs=False`` leaves its ``runs`` lines unread.

    A 100k-run report.json is mostly its ``runs`` lines; a reader that needs
    only the figures (the closing summary) skips them line by line, as the
    lab writes them (:func:`iter_dumps_json`: the top-level members at two
    spaces, everything inside deeper), and gets the document without ``runs``.

    Raises:
        OSError: the file cannot be read; ValueError: it is not JSON.
    """
    if runs:
        return dict(loads_json(read_text(path)))
    kept: list[str] = []
    with open_text(path) as fh:
        skipping = False
        for line in fh:
            if skipping:
                if line.startswith("  ]"):  # the closing bracket of the top-level runs list
                    kept.append('  "runs": []' + line[3:])
                    skipping = False
                continue
            if line == '  "runs": [\n':
                skipping = True
                continue
            kept.append(line)
    doc = dict(loads_json("".join(kept)))
    doc.pop("runs", None)
    return doc
