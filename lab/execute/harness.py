"""What a run's and a report's code is: the harness digest and the report-code digest (SPEC X4, X10).

A remembered run may stand in for executing it only if everything the run
executed is in its key. Which lab modules a run executes cannot be listed
exactly (a lazy import, a redaction path taken once in a thousand runs), so
the *harness digest* is conservative: every module and data file of the
installed ``lab`` package except the two a run never executes —
``lab.report`` and ``lab.compare`` (an import-linter contract in
``pyproject.toml`` forbids every run-side package to import them; the build
layer uses them for the report and for console lines) — plus the interpreter's version and
the name and version of every installed distribution the lab requires,
directly or through another (:func:`runtime_distributions`).

A Python source counts by its token stream without comments and blank lines
(:func:`source_digest`; docstrings count, they can be tool descriptions): an
edited comment re-runs nothing, an edited statement re-runs every run.

The *report-code digest* (:func:`report_code_digest`) covers the whole
package, ``lab.report``, ``lab.compare`` and the schemas included, and the
same distributions: a report is rebuilt when the code that writes it changes.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
from functools import cache
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parent.parent
RUN_EXCLUDED = ("report", "compare")
"""Subpackages of ``lab`` a run never executes (left out of the harness digest only)."""
SKIPPED_DIRS = frozenset({"__pycache__"})
DIST_KIND = "runtime-distributions"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"\bextra\s*==")


def source_digest(data: bytes) -> str:
    """sha256 hex of a Python source's token stream, comments and blank lines left out.

    Tokens are hashed as ``type NUL string NUL`` (a logical line's end as its
    type only, so ``\\r\\n`` and ``\\n`` agree). A source that does not
    tokenize counts by its bytes.
    """
    import tokenize

    digest = hashlib.sha256()
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING):
                continue
            text = "" if token.type == tokenize.NEWLINE else token.string
            digest.update(f"{token.type}\0{text}\0".encode("utf-8", "surrogateescape"))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return "bytes:" + hashlib.sha256(data).hexdigest()
    return digest.hexdigest()


def package_files() -> list[Path]:
    """Every file of the ``lab`` package (sources, schemas, templates), ``__pycache__`` and
    ``*.pyc`` left out; sorted."""
    found: list[Path] = []
    for top, dirs, files in os.walk(LAB_DIR):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        found += [Path(top, name) for name in files if not name.endswith((".pyc", ".pyo"))]
    return sorted(found)


@cache
def _file_values() -> tuple[tuple[str, str], ...]:
    """``(path relative to the package, digest)`` of every file of the package, read once per process."""
    from lab.stamps import DigestCache, shared_cache_dir

    # Content-addressed, so it holds for any data dir: kept in the user cache dir.
    digests = DigestCache(shared_cache_dir() / "source-digests.json")
    found = []
    for path in package_files():
        python = path.suffix == ".py"
        value = digests.digest(path, source_digest if python else None, kind="tokens" if python else "")
        if value is None:
            raise FileNotFoundError(f"harness source {path} is missing")
        found.append((path.relative_to(LAB_DIR).as_posix(), value))
    digests.save()
    return tuple(found)


def _digest(excluded: tuple[str, ...]) -> str:
    digest = hashlib.sha256(f"python {sys.implementation.name} {sys.version}\0".encode())
    for name in runtime_distributions():
        digest.update(f"dist {name}\0".encode())
    for rel, value in _file_values():
        if rel.partition("/")[0] not in excluded:
            digest.update(rel.encode() + b"\0" + value.encode() + b"\0")
    return digest.hexdigest()


@cache
def harness_digest() -> str:
    """sha256 hex of the code a run can execute (see the module docstring); once per process."""
    return _digest(RUN_EXCLUDED)


@cache
def report_code_digest() -> str:
    """sha256 hex of the code and schemas that write a report: the whole package; once per process."""
    return _digest(())


def _installed() -> dict[str, str]:
    """``{normalised name: dist-info/egg-info directory}`` over ``sys.path`` (first one wins)."""
    found: dict[str, str] = {}
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                key = _normal(name.rsplit(".", 1)[0].split("-", 1)[0])
                found.setdefault(key, os.path.join(folder, name))
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def runtime_distributions() -> tuple[str, ...]:
    """``name==version`` of every installed distribution ``reliability-lab`` requires, directly or
    through another (extras left out), sorted; remembered in the user cache dir by the names of
    the ``*.dist-info`` directories on ``sys.path`` (which carry their versions)."""
    from lab.canonical import canonical_hash
    from lab.stamps import caching, read_entry, shared_cache_dir, write_entry

    installed = _installed()
    ident = {"installed": [os.path.basename(p) for p in installed.values()], "sysPath": list(sys.path)}
    file = shared_cache_dir() / "distributions" / f"{canonical_hash(ident)}.json"
    entry = read_entry(file, DIST_KIND) if caching() else None
    if entry is not None and entry.get("ident") == ident and isinstance(entry.get("names"), list):
        return tuple(str(n) for n in entry["names"])
    names = _closure(installed)
    if caching():
        write_entry(file, DIST_KIND, {"ident": ident, "names": list(names)})
    return names


def _closure(installed: dict[str, str]) -> tuple[str, ...]:
    import importlib.metadata

    seen: dict[str, str] = {}
    pending = ["reliability-lab"]
    while pending:
        key = _normal(pending.pop())
        if key in seen or key not in installed:
            continue
        try:
            dist = importlib.metadata.PathDistribution(Path(installed[key]))
            version, requires = dist.version, dist.requires or []
        except (OSError, ValueError):
            continue
        seen[key] = f"{key}=={version}"
        for requirement in requires:
            if _EXTRA.search(requirement):
                continue
            match = _NAME.match(requirement)
            if match:
                pending.append(match.group(1))
    return tuple(sorted(seen.values()))


EXECUTION_KEYS = ("jobs", "machine", "sandbox", "executor", "labVersion")
"""The execution facts of a run (its record's ``runtime`` block) a comparison of wall times reads."""


def execution_facts(sandbox: str, executor: str = "local") -> dict[str, str]:
    """The facts a run record's ``runtime`` block adds to the runtime settings (``jobs`` is one of
    those): this machine, the sandbox backend, the executor and the lab's version."""
    from lab import __version__

    return {"machine": machine_id(), "sandbox": sandbox, "executor": executor, "labVersion": __version__}


@cache
def machine_id() -> str:
    """A short fingerprint of this machine (host name, architecture, CPU count), not the name itself.

    Wall times measured on different machines, or with a different ``jobs``,
    are not comparable (``lab.compare.deltas``).
    """
    try:
        node, machine = os.uname().nodename, os.uname().machine  # what platform.node()/machine() give
    except AttributeError:  # no uname (not POSIX)
        import platform

        node, machine = platform.node(), platform.machine()
    text = f"{node}|{machine}|{os.cpu_count()}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
