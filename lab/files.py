"""Files as the lab writes and reads them.

Writing is atomic: every file the lab writes appears whole or not at all
(:func:`write_atomic`). Reading is by type: every file the lab reads that a
user, an agent or an earlier run made (suite and task files, configuration,
cassettes, records, reports read again) is opened with :func:`open_regular`
(or :func:`read_bytes`/:func:`read_text`), which refuses a FIFO, socket or
device before a byte is read (``open`` on a FIFO blocks until a writer comes),
and JSON is parsed with :func:`loads_json`, which reports nesting too deep to
parse as malformed JSON at its position instead of a ``RecursionError``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO, Any


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
        return f"{probe} is not writable: making a directory there failed ({exc.strerror or exc})"
    return None


class NotRegularFile(OSError):
    """A path the lab reads is a FIFO, socket, device or directory, not a regular file.

    An ``OSError`` (``errno.EINVAL``, or ``EISDIR`` for a directory), so every
    handler of an unreadable file handles it too; its message names the file
    and its type.
    """


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def file_kind(mode: int) -> str:
    """The type of a ``st_mode`` in words: ``regular file``, ``directory``, ``FIFO`` …"""
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of ``path``, which must be (a link to) a regular file.

    Its type is checked with ``stat`` before it is opened, then opened with
    ``O_NONBLOCK`` (a FIFO swapped in meanwhile cannot block the open) and
    checked again with ``fstat`` before any byte is read. The caller closes
    the descriptor.

    Raises:
        NotRegularFile: ``path`` is a FIFO, socket, device or directory (names it and its type).
        OSError: any other failure of open (missing file, no permission).
    """
    _check_regular(os.stat(path).st_mode, path)  # a socket cannot even be opened (ENXIO)
    fd = os.open(path, _READ_FLAGS)
    try:
        _check_regular(os.fstat(fd).st_mode, path)  # what was opened, should the path have changed since
        if _READ_FLAGS & os.O_NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(mode: int, path: str | os.PathLike[str]) -> None:
    if not stat.S_ISREG(mode):
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        raise NotRegularFile(code, f"not a regular file (a {file_kind(mode)})", os.fspath(path))


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`: a FIFO or device is refused).

    Raises:
        NotRegularFile: ``path`` is not a regular file.
        OSError: it cannot be opened or read.
    """
    with os.fdopen(open_regular(path), "rb") as fh:
        return fh.read()


def read_text(path: str | os.PathLike[str], encoding: str = "utf-8", errors: str = "strict") -> str:
    """The text of the regular file ``path``; see :func:`read_bytes`.

    Raises:
        NotRegularFile, OSError: as :func:`read_bytes`; UnicodeDecodeError: not ``encoding``.
    """
    return read_bytes(path).decode(encoding, errors)


def open_text(path: str | os.PathLike[str], encoding: str = "utf-8", errors: str = "strict") -> IO[str]:
    """``path`` opened for reading text, after :func:`open_regular` checked its type."""
    return os.fdopen(open_regular(path), "r", encoding=encoding, errors=errors)


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` opened for reading bytes, after :func:`open_regular` checked its type."""
    return os.fdopen(open_regular(path), "rb")


def loads_json(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)``; nesting too deep to parse is a ``JSONDecodeError`` too.

    Python's JSON parser recurses once per ``[`` or ``{``; a line nested
    200,000 deep raises ``RecursionError``. Here that becomes
    ``json.JSONDecodeError`` ("nested deeper than … levels") at the first
    position past the parser's depth, so every reader that reports malformed
    JSON with its file and line reports this one the same way.

    Raises:
        json.JSONDecodeError: not JSON, or nested too deep.
    """
    try:
        return json.loads(text, **options)
    except RecursionError:
        doc = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else text
        limit = max(1, sys.getrecursionlimit() // 2)
        raise json.JSONDecodeError(f"arrays/objects nested too deep to parse (over {limit} levels)",
                                   doc, _depth_position(doc, limit)) from None


def _depth_position(doc: str, limit: int) -> int:
    """Index of the first ``[``/``{`` (outside strings) that opens nesting level ``limit + 1``, or 0."""
    depth, in_string, escaped = 0, False, False
    for index, char in enumerate(doc):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return index
        elif char in "]}":
            depth -= 1
    return 0
