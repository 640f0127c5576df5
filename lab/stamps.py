"""File stamps, and what the lab remembers by them between commands (the no-op path).

The rule every memo of the lab keeps: **a remembered result may stand in for
work only if everything that work read is in its key.** Here a *stamp* of a
path is ``[kind, sha256 hex]`` of what the path holds now (:func:`content_stamp`):
a file's bytes, a directory's sorted entry names, a link's target text
(``None``: the path does not exist or cannot be read). A stamp is a content
check, never a file time: a same-size rewrite with its mtime put back, a file
system with 1-second timestamps, or a clock ahead of the file server's cannot
make a changed file look unchanged. Measured on the reference machine, the
check of a small file (read and hash) costs 10–20 µs, a ``stat`` 2–4 µs; the
no-op figures in docs/performance.md include it.

An entry is written only when its inputs, stamped before the work read them,
have the same stamps after it (:func:`remember`): a file changed while it was
read is read again by the next command.

What is remembered about a data dir's run store (the record index, closing
summaries, file digests) lives under ``<data dir>/.cache/`` (:func:`cache_dir`);
what holds for any data dir (the composed configuration, loaded suites, a
working sandbox) under the user's cache directory (:func:`shared_cache_dir`),
so a command run against a new data dir finds it too. One JSON document per
entry, written atomically. An entry is checked when read:
one that does not parse, has another ``kind`` or ``schemaVersion``, or names
other inputs is ignored and rebuilt, never trusted and never an error.

``LAB_NO_CACHE=1`` bypasses every memo (:func:`caching`): nothing is read from
or written to either cache directory, and every result is computed again —
the reference a cached command is compared with.

:class:`DigestCache` keeps what is derived from a file's bytes (the token
digest of a harness source) by the sha256 of those bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from lab import paths
from lab.files import loads_json, open_regular, read_bytes

Stamp = list[Any]
"""``[kind, sha256 hex]`` (:func:`content_stamp`), or ``[size, mtime_ns, inode, ctime_ns]`` (:func:`stamp`)."""

SCHEMA_VERSION = 2
MAX_DIGESTS = 20_000
"""Entries a :class:`DigestCache` keeps; past that the oldest are dropped (they are only hashed again)."""


_CACHE_DIRS: dict[tuple[str | None, ...], Path] = {}


def cache_dir(data: Path | None = None) -> Path:
    """``<data dir>/.cache``: the lab's remembered results (safe to delete at any time)."""
    if data is not None:
        return data / ".cache"
    key = tuple(os.environ.get(name) for name in ("LAB_DATA_DIR", "XDG_DATA_HOME", "HOME"))
    if key not in _CACHE_DIRS:  # as paths.data_dir() decides it, from these variables
        _CACHE_DIRS[key] = paths.data_dir() / ".cache"
    return _CACHE_DIRS[key]


def shared_cache_dir() -> Path:
    """Where results that hold for any data dir are remembered (safe to delete at any time).

    ``$LAB_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/reliability-lab``, else
    ``~/.cache/reliability-lab``: the composed configuration, loaded suites and
    a working sandbox, each keyed by everything it was made from.
    """
    explicit = os.environ.get("LAB_CACHE_DIR")
    if explicit:
        return Path(explicit).absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "reliability-lab"


def stamp(path: str | os.PathLike[str], *, follow: bool = True) -> Stamp | None:
    """The stamp of ``path`` (links followed unless ``follow=False``); None when it cannot be looked at."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def caching() -> bool:
    """Whether memos may be used: not when ``LAB_NO_CACHE`` is set to anything but ``""``/``0``."""
    return os.environ.get("LAB_NO_CACHE", "") in ("", "0")


def content_stamp(path: str | os.PathLike[str], *, follow: bool = True) -> Stamp | None:
    """``[kind, sha256 hex]`` of what ``path`` holds: ``"f"`` and its bytes, ``"d"`` and its
    sorted entry names (NUL-separated), ``"l"`` and its target text (``follow=False`` only);
    None when it is missing or cannot be read."""
    try:
        if not follow and os.path.islink(path):
            return ["l", hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()]
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            return ["d", hashlib.sha256(b"\0".join(map(os.fsencode, names))).hexdigest()]
        with os.fdopen(open_regular(path), "rb") as fh:  # a FIFO or device is refused, never read
            return ["f", hashlib.file_digest(fh, "sha256").hexdigest()]
    except (OSError, ValueError):
        return None


def now_ns() -> int:
    """The wall clock in nanoseconds: file times are on that clock."""
    return time.time_ns()


def tree_stamps(root: Path, *, follow: bool = True) -> dict[str, Stamp | None]:
    """Content stamps of ``root`` and of every directory and file below it, by absolute path.

    A directory's stamp changes when an entry is added, removed or renamed in
    it, so checking the recorded paths alone notices a new file. With
    ``follow=False`` links are stamped as links and not descended into.
    """
    found: dict[str, Stamp | None] = {str(root): content_stamp(root, follow=follow)}
    for top, dirs, files in os.walk(root, followlinks=follow):
        dirs.sort()
        for name in [*dirs, *sorted(files)]:
            full = os.path.join(top, name)
            found[full] = content_stamp(full, follow=follow)
    return found


def stamps_unchanged(recorded: Mapping[str, Any]) -> bool:
    """Whether every path in ``recorded`` (path -> content stamp, as JSON gives it back) still holds
    what it held (links are compared as links when they were stamped as links)."""
    for path, value in recorded.items():
        follow = not (isinstance(value, list) and value[:1] == ["l"])
        if content_stamp(path, follow=follow) != value:
            return False
    return True


_CODE_STAMPS: dict[str, Stamp | None] = {}


def code_stamps() -> dict[str, Stamp | None]:
    """Content stamps of :func:`loaded_code_files` (each taken once per process, kept for
    :func:`code_unchanged`)."""
    found = {}
    for file in loaded_code_files():
        if file not in _CODE_STAMPS:
            _CODE_STAMPS[file] = content_stamp(file)
        found[file] = _CODE_STAMPS[file]
    return found


def code_unchanged(recorded: Mapping[str, Any]) -> bool:
    """:func:`stamps_unchanged` for code files: each is looked at once per process (the code a
    process runs is what it loaded; an edit after that is seen by the next command)."""
    for file, value in recorded.items():
        if file not in _CODE_STAMPS:
            _CODE_STAMPS[file] = content_stamp(file)
        if _CODE_STAMPS[file] != value:
            return False
    return True


def loaded_code_files() -> list[str]:
    """The files of the code this process has loaded that can change under it: every ``lab``
    module, every file under ``lab/schemas/``, and the top-level module of every third-party
    library (an upgrade rewrites it). Sorted, unique."""
    files = set()
    stdlib = sys.stdlib_module_names
    for name, module in list(sys.modules.items()):
        top = name.partition(".")[0]
        if top == "lab" or ("." not in name and top not in stdlib):
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                files.add(file)
    files.update(str(p) for p in paths.SCHEMAS_DIR.glob("*") if p.is_file())
    return sorted(files)


def remembered(file: Path, kind: str, ident: Mapping[str, Any]) -> dict[str, Any] | None:
    """The entry of ``kind`` in ``file`` made for ``ident`` (compared whole), when every input and
    code file it names still has its stamp (see :func:`remember`); else None."""
    if not caching():
        return None
    entry = read_entry(file, kind)
    if entry is None or entry.get("ident") != ident:
        return None
    inputs, code = entry.get("inputs"), entry.get("code")
    if not isinstance(inputs, dict) or not isinstance(code, dict):
        return None
    return entry if stamps_unchanged(inputs) and code_unchanged(code) else None


def remember(file: Path, kind: str, ident: Mapping[str, Any], inputs: Mapping[str, Stamp | None],
             body: Mapping[str, Any]) -> bool:
    """Write an entry of ``kind`` for ``ident``: ``body``, the content stamps of its ``inputs`` and of
    the code loaded (:func:`code_stamps`). ``inputs`` must have been stamped before they were read;
    nothing is written unless each still holds what it held then (a file changed while the work
    read it), nor with ``LAB_NO_CACHE`` set. Returns whether it was written."""
    if not caching() or not stamps_unchanged(inputs):
        return False
    return write_entry(file, kind, {"ident": dict(ident), "inputs": dict(inputs), "code": code_stamps(), **body})


def env_digest(value: str | None) -> str | None:
    """sha256 hex of an environment value (None when unset): what an entry keeps instead of the value."""
    return None if value is None else hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def read_entry(file: Path, kind: str) -> dict[str, Any] | None:
    """The JSON document in ``file`` when it is an entry of ``kind`` at this schema version, else None."""
    try:
        doc = loads_json(read_bytes(file))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("schemaVersion") != SCHEMA_VERSION or doc.get("kind") != kind:
        return None
    return doc


def write_entry(file: Path, kind: str, body: Mapping[str, Any]) -> bool:
    """Write an entry of ``kind`` atomically; False (and nothing written) when the disk refuses."""
    from lab.files import write_atomic

    doc = {"schemaVersion": SCHEMA_VERSION, "kind": kind, **body}
    try:
        write_atomic(file, json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except (OSError, ValueError, TypeError):
        return False
    return True


class DigestCache:
    """What is derived from files' bytes (a token digest), remembered by the sha256 of those bytes
    (content-addressed: the derivation must be a function of the bytes alone).

    Args:
        file: where the derived values are kept between commands (None: this process only).

    Every call reads the file (the content check, see the module docstring);
    only the derivation is saved. Thread-safe. :meth:`save` writes what changed
    (atomically); two commands saving at once lose one another's new entries,
    which are then derived again. With ``LAB_NO_CACHE`` nothing is read or saved.
    """

    KIND = "file-digests"

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self._entries: dict[str, str] | None = None
        self._dirty = False
        self._lock = threading.Lock()

    def _loaded(self) -> dict[str, str]:
        if self._entries is None:
            doc = read_entry(self.file, self.KIND) if self.file is not None and caching() else None
            entries = doc.get("files") if doc else None
            self._entries = {k: v for k, v in entries.items() if isinstance(v, str)} \
                if isinstance(entries, dict) else {}
        return self._entries

    def digest(self, path: Path, derive: Callable[[bytes], str] | None = None, *, kind: str = "") -> str | None:
        """sha256 hex of the bytes of ``path`` (links followed), or ``derive(bytes)`` remembered by
        ``kind`` and that sha256 (whatever the path); None when the file is missing.

        Raises:
            OSError: the file exists but cannot be read.
        """
        try:
            data = read_bytes(path)  # a FIFO or device is refused (NotRegularFile, an OSError), never read
        except FileNotFoundError:
            return None
        raw = hashlib.sha256(data).hexdigest()
        if derive is None:
            return raw
        key = f"{kind}:{raw}"
        with self._lock:
            hit = self._loaded().get(key)
        if hit is not None:
            return hit
        derived = derive(data)
        with self._lock:
            self._loaded()[key] = derived
            self._dirty = True
        return derived

    def save(self) -> None:
        """Write the digests if any was added (at most :data:`MAX_DIGESTS`, newest kept)."""
        with self._lock:
            if not self._dirty or self.file is None or self._entries is None or not caching():
                return
            entries = dict(list(self._entries.items())[-MAX_DIGESTS:])
            self._dirty = not write_entry(self.file, self.KIND, {"files": entries})


_SHARED: dict[Path, DigestCache] = {}
_SHARED_LOCK = threading.Lock()


def shared_digests() -> DigestCache:
    """The process's :class:`DigestCache` for the current data dir (``.cache/digests.json``)."""
    file = cache_dir() / "digests.json"
    with _SHARED_LOCK:
        if file not in _SHARED:
            _SHARED[file] = DigestCache(file)
        return _SHARED[file]


def walk_files(root: Path, suffix: str) -> Iterator[Path]:
    """Files under ``root`` whose name ends in ``suffix``, in the order of ``sorted(root.rglob('*' + suffix))``."""
    found = []
    for top, _dirs, files in os.walk(root):
        found += [Path(top, name) for name in files if name.endswith(suffix)]
    yield from sorted(found)
