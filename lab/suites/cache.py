"""A loaded suite, remembered between commands (the no-op path).

Loading a suite validates ``suite.json`` against its JSON Schema, checks
every fixture path and link and hashes every file of the suite directory.
:func:`load_suite_cached` gives back the :class:`~lab.suites.load.Suite` an
earlier command loaded from the same directory when nothing it was made from
changed, checked by content stamps (:mod:`lab.stamps`):

- every directory, file and link under the suite directory (a directory's
  stamp changes when an entry is added, removed or renamed in it);
- the agent profiles a task may name (every file under ``conf/agent/``);
- every code file loaded when it was loaded: the lab's suite loader and
  schemas, and the libraries it uses (jsonschema, semver).

Stamps are taken before the suite is read, and the entry is written only
when every stamped path still holds what it held then. A suite that
does not load is never remembered: its problems are reported again. Nor is
one holding a link that names a path outside its directory: where that link
resolves depends on links outside the suite, which are not stamped.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from lab.canonical import canonical_hash
from lab.paths import CONF_DIR
from lab.stamps import remember, remembered, shared_cache_dir, tree_stamps
from lab.suites.load import Suite, Task, load_suite

KIND = "loaded-suite"


def load_suite_cached(path: Path, *, cache: Path | None = None) -> Suite:
    """:func:`~lab.suites.load.load_suite`, remembered between commands.

    Args:
        path: the suite directory (or its ``suite.json``).
        cache: the cache directory; default ``lab.stamps.shared_cache_dir()``.

    Returns:
        A suite equal to what ``load_suite(path)`` returns.

    Raises:
        SuiteError: as ``load_suite`` (a suite that does not load is not remembered).
    """
    suite_dir = (path.parent if path.name == "suite.json" else path).absolute()
    ident = {"path": str(suite_dir)}
    file = (shared_cache_dir() if cache is None else cache) / "suites" / f"{canonical_hash(ident)}.json"
    entry = remembered(file, KIND, ident)
    if entry is not None:
        try:
            return decode_suite(entry["suite"])
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # another lab's shape: load it again
    # Stamped before the suite is read: a change while it loads shows as a new stamp.
    inputs = {**tree_stamps(suite_dir, follow=False), **tree_stamps(CONF_DIR / "agent")}
    suite = load_suite(suite_dir)
    encoded = _encoded(suite)
    if encoded is not None and not _links_leave(suite_dir, inputs):
        remember(file, KIND, ident, inputs, {"suite": encoded})
    return suite


def _links_leave(suite_dir: Path, stamps: dict[str, Any]) -> bool:
    """Whether a link under ``suite_dir`` names a path outside it (absolute, or ``..`` above it).

    Links are stamped by their target text: where such a link resolves (and so whether the
    suite loads) also depends on links and directories outside the suite, which are not
    stamped. A suite holding one is loaded again by every command, never remembered."""
    root = os.path.normpath(suite_dir)
    for path, stamp in stamps.items():
        if isinstance(stamp, list) and stamp[:1] == ["l"] and path != str(suite_dir):  # the suite's own link:
            # its target text is stamped, and every file below is stamped through it
            try:
                target = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
            except OSError:
                return True
            if target != root and not target.startswith(root + os.sep):
                return True
    return False


def _encoded(suite: Suite) -> dict[str, Any] | None:
    """:func:`encode_suite`, when the suite reads back identical from its JSON (else None)."""
    import json

    try:
        encoded = encode_suite(suite)
        return encoded if _identical(decode_suite(json.loads(json.dumps(encoded, ensure_ascii=False))), suite) \
            else None
    except (TypeError, ValueError, KeyError):
        return None


def encode_suite(suite: Suite) -> dict[str, Any]:
    """``suite`` as JSON-able data (paths and tuples tagged) that :func:`decode_suite` reads back."""
    doc = {f.name: _encode(getattr(suite, f.name)) for f in dataclasses.fields(Suite) if f.name != "tasks"}
    doc["tasks"] = [{f.name: _encode(getattr(task, f.name)) for f in dataclasses.fields(Task)}
                    for task in suite.tasks]
    return doc


def decode_suite(doc: dict[str, Any]) -> Suite:
    """The :class:`Suite` :func:`encode_suite` wrote.

    Raises:
        KeyError, TypeError, ValueError: ``doc`` is not what ``encode_suite`` writes for this lab.
    """
    tasks = tuple(Task(**{k: _decode(v) for k, v in task.items()}) for task in doc["tasks"])
    return Suite(**{k: _decode(v) for k, v in doc.items() if k != "tasks"}, tasks=tasks)


def _encode(value: Any) -> Any:
    if isinstance(value, Path):
        return {"path": str(value)}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a suite mapping with a key that is not a string")
        return {"dict": {k: _encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise TypeError(f"cannot remember a {type(value).__name__} of a suite")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        (tag, inner), = value.items()
        if tag == "path":
            return Path(inner)
        if tag == "tuple":
            return tuple(_decode(v) for v in inner)
        if tag == "dict":
            return {k: _decode(v) for k, v in inner.items()}
        raise ValueError(f"unknown tag {tag!r}")
    return value


def _identical(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (``1`` is not ``1.0``, a tuple is not a list)."""
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(_identical(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
