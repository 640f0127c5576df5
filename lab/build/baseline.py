"""A suite changed without a version bump never overwrites the results of its version (SPEC S5, X4).

The run store of an eval is keyed by the suite *version* (:func:`lab.config.identity.store_key`),
not by its digest: a changed fixture or verifier must come with a new
``suiteVersion``, and then its runs land in a store of their own beside the
old baseline. When the suite's files changed and its version did not, every
run's inputs differ (the suite digest is one of them) while the store and the
run id stay the same: the next eval would execute every run again and replace
the old records and report, the very baseline the change is to be compared
with. :func:`check_baseline` refuses that before any run, in one line naming
the suite, its version, both digests and the two ways on; ``overwrite=true``
(a runtime option, outside the effective-config hash) lets the eval replace
that version's records and report knowingly. Nothing is ever deleted here.

What a store holds is known cheaply from ``<store>/suite-digest.json``
(schema ``suite-digest``), written by :func:`remember_digest` when an eval
that passed the check starts: ``{"schemaVersion": 1, "suiteId", "suiteVersion",
"suiteDigest"}``. When it names the current digest the check costs one small
read. When it is absent (a store made before it existed) or names another
digest, the records and reports themselves decide: the store holds results of
another digest when any run record's ``inputs.suiteDigest`` or any report's
``header.suiteDigest`` differs (read until the first one that does; a store
whose results were all removed, or made at this digest, proceeds).

``doit record`` is not checked: it re-records every run by design (its
store is its own, keyed by ``mode=record``), and recording anew after a
fixture changed is how cassettes follow the suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab.errors import ConfigError
from lab.files import loads_json, read_bytes

MARKER = "suite-digest.json"
"""The file in a run store naming the suite digest of the eval that last wrote results there."""


def check_baseline(prep: Any) -> None:
    """Refuse an eval that would overwrite its suite version's results made from other suite files.

    Args:
        prep: a :class:`lab.build.graph.Prepared` (its ``store`` final: a
            variants command moves it before calling this).

    Raises:
        ConfigError: the store holds runs or a report of the same suite
            version made with another suite digest, and ``overwrite`` is not
            set. One line: suite id, version, stored and current digest (12
            hex digits each), and the fix.
    """
    ctx = prep.ctx
    if ctx.config.mode == "record" or ctx.config.data.get("overwrite"):
        return
    suite = ctx.suite
    stored = stored_digest(prep.store, suite.version, suite.digest)
    if stored is None:
        return
    raise ConfigError(
        f"suite {suite.id} {suite.version}: its files changed but suiteVersion did not (suite digest "
        f"{stored[:12]} stored in {prep.store}, {suite.digest[:12]} now); bump suiteVersion in "
        f"{suite.path / 'suite.json'} to keep the results of {suite.version}, or add overwrite=true "
        f"to replace them")


def stored_digest(store: Path, version: str, current: str) -> str | None:
    """The suite digest, other than ``current``, of results of suite version ``version`` in ``store``;
    None when there is none.

    Reads ``<store>/suite-digest.json`` and, unless it names ``version`` and
    ``current``, the run records (``<store>/runs/*/*.json``) and reports
    (``<store>/reports/*/report.json``) until the first of this version and
    another digest. Unreadable or malformed files are skipped (they hold no
    result to keep); results of another version are not this version's
    baseline (a variants command keeps its runs by command, not by version).
    """
    marker = _read_json(store / MARKER)
    if marker is not None and (marker.get("suiteVersion"), marker.get("suiteDigest")) == (version, current):
        return None
    for stored_version, digest in _result_digests(store):
        if stored_version == version and isinstance(digest, str) and digest != current:
            return digest
    return None


def remember_digest(prep: Any) -> None:
    """Write ``<store>/suite-digest.json`` for the suite this eval runs (atomically; unchanged: not written)."""
    from lab.files import dumps_json, write_atomic

    suite = prep.ctx.suite
    doc = {"schemaVersion": 1, "suiteId": suite.id, "suiteVersion": suite.version, "suiteDigest": suite.digest}
    path = prep.store / MARKER
    if _read_json(path) != doc:
        write_atomic(path, dumps_json(doc).encode("utf-8"))


def _result_digests(store: Path) -> Iterator[tuple[Any, Any]]:
    """(suite version, suite digest) of each run record and report in ``store``, in directory order."""
    for record in _files(store / "runs", "*.json"):
        doc = _read_json(record)
        inputs = doc.get("inputs") if doc is not None else None
        if isinstance(inputs, dict):
            yield inputs.get("suiteVersion"), inputs.get("suiteDigest")
    for report in _files(store / "reports", "report.json"):
        doc = _read_json(report)
        header = doc.get("header") if doc is not None else None
        if isinstance(header, dict):
            yield header.get("suiteVersion"), header.get("suiteDigest")


def _files(root: Path, pattern: str) -> Iterator[Path]:
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return
    for folder in folders:
        yield from sorted(folder.glob(pattern))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = loads_json(read_bytes(path))  # a FIFO in its place is refused, not waited on
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
