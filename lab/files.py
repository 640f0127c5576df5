"""Atomic file writing: every file the lab writes appears whole or not at all."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temp file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def encodable(text: str) -> str:
    """``text`` with every lone surrogate (valid in JSON, not encodable as UTF-8) replaced by U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, text)


def has_unencodable(text: str) -> bool:
    """True when ``text`` holds a code point UTF-8 cannot encode (a lone surrogate)."""
    return _SURROGATE.search(text) is not None


def split_lines(text: str) -> list[str]:
    """``text`` split at ``\\n`` only, the line break of JSON Lines and of ``grep -n`` / ``wc -l``.

    ``str.splitlines`` also splits at ``\\r``, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``,
    U+0085, U+2028 and U+2029, which the lab writes raw inside JSON strings
    (``ensure_ascii=False``); splitting there would break a record in two.
    A final ``\\n`` does not start an empty last line.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def ordered(value: Any) -> Any:
    """``value`` with every object's keys sorted, ``schemaVersion`` first, and text made encodable.

    Lone surrogates in strings become U+FFFD (:func:`encodable`) so every file
    the lab writes encodes as UTF-8.
    """
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (k != "schemaVersion", k))
        return {encodable(k) if isinstance(k, str) else k: ordered(value[k]) for k in keys}
    if isinstance(value, list):
        return [ordered(v) for v in value]
    if isinstance(value, str):
        return encodable(value)
    return value


def dumps_json(value: Any) -> str:
    """JSON as the lab writes it: sorted keys (``schemaVersion`` first), 2-space indent, trailing newline."""
    return json.dumps(ordered(value), indent=2, ensure_ascii=False) + "\n"


def dumps_line(value: Any) -> str:
    """One compact JSON Lines record (keys as :func:`ordered`), with its newline."""
    return json.dumps(ordered(value), ensure_ascii=False, separators=(",", ":")) + "\n"


def write_json(path: Path, value: Any) -> None:
    """Atomically write ``value`` as :func:`dumps_json`."""
    write_atomic(path, dumps_json(value).encode("utf-8"))


def publish_dir(staging: Path, final: Path) -> None:
    """Replace directory ``final`` by the fully written ``staging`` directory.

    ``staging`` must be a sibling of ``final`` (same filesystem). An older
    ``final`` is moved aside first and removed after the rename, so a reader
    sees either the old directory or the new one, never a half-written one.
    """
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(staging, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def copy_files(source: Path, target: Path) -> None:
    """Copy every file of directory ``source`` (subdirectories included) into ``target``, each atomically.

    Files already in ``target`` that ``source`` lacks are left alone: ``target``
    may be any directory the user names, so nothing in it is ever deleted.
    """
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.rglob("*")):
        if path.is_file():
            write_atomic(target / path.relative_to(source), path.read_bytes())


def unwritable_dir_reason(path: Path) -> str | None:
    """Why a directory cannot be created or written at ``path``, or None when it can.

    Looks at ``path`` if it exists, else at its nearest existing ancestor (the
    directory ``mkdir -p`` would create it in): it must be a directory in
    which an entry can really be made (a temporary directory is created and
    removed there, which also catches read-only mounts and file systems such
    as ``/proc`` that refuse even root). Used to refuse an output directory
    before any work is done.
    """
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".lab-write-check-", dir=probe))
    except OSError as exc:
        return f"{probe} is not writable ({exc.strerror or exc})"
    return None
