"""Where a suite comes from: bundled, ``suite_dir`` or ``suite.path`` (SPEC S6).

Selecting a suite:

- ``suite=<id>`` picks ``conf/suite/<id>.yaml``, a bundled suite under the
  checkout's ``suites/``.
- ``suite_dir=DIR suite=<id>`` loads ``DIR/<id>`` when ``DIR/<id>/suite.json``
  exists (or when no bundled option ``<id>`` exists); :mod:`lab.config.compose`
  rewrites it to the generic option ``suite=external suite.id=<id>``, whose
  ``path`` is null and resolves here to ``<suite_dir>/<id>``.
- ``suite=external suite.path=P`` loads the suite in ``P`` from anywhere.

Relative ``suite.path`` and ``suite_dir`` are resolved against the checkout
(the directory holding ``conf/``), like every configured path.

A suite whose directory is not inside the checkout's ``suites/`` runs code
with the user's privileges: the lab warns on stderr and asks on a terminal;
without a terminal it refuses unless ``yes=true``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from lab import paths
from lab.errors import ConfigError
from lab.suites.load import Suite, load_suite

EXTERNAL_OPTION = "external"
"""The ``conf/suite`` option for suites outside the checkout."""

# (suite dir, digest) pairs accepted in this process, so one command asks once.
_CONFIRMED: set[tuple[str, str]] = set()


def suite_location(data: dict[str, Any]) -> Path:
    """The suite directory a resolved configuration selects (absolute, not resolved).

    Raises:
        ConfigError: neither ``suite.path`` nor ``suite_dir`` with ``suite.id`` is set.
    """
    suite = data["suite"]
    if suite.get("path"):
        return paths.from_root(str(suite["path"])).absolute()
    if data.get("suite_dir") and suite.get("id"):
        return paths.from_root(str(data["suite_dir"])).absolute() / str(suite["id"])
    raise ConfigError("config: suite.path: no suite location; use suite=<id> for a bundled suite, "
                      "suite_dir=DIR suite=<id>, or suite=external suite.path=DIR")


def is_third_party(suite_dir: Path) -> bool:
    """True when ``suite_dir`` (links followed) is not inside the checkout's ``suites/``.

    Compared by path components, so ``/x/suites-evil`` is not inside ``/x/suites``.
    """
    return not suite_dir.resolve().is_relative_to(paths.SUITES_DIR.resolve())


def cassette_root(suite_dir: Path, cassette_dir: str | None) -> Path:
    """Where the cassettes of the suite at ``suite_dir`` live (``<root>/<suite id>/<task>.jsonl``).

    ``cassette_dir`` when given; the checkout's ``cassettes/`` for a bundled
    suite; ``<suite dir>/cassettes/`` for a suite outside the checkout, so
    recording it never writes into the lab's own ``cassettes/``.
    """
    from lab.suites.paths import SUITE_CASSETTES

    if cassette_dir:
        return paths.from_root(cassette_dir)
    return suite_dir / SUITE_CASSETTES if is_third_party(suite_dir) else paths.CASSETTES_DIR


def resolve_suite(config: Any, *, stdin: TextIO | None = None, stderr: TextIO | None = None,
                  ask: Callable[[], str] | None = None, cached: bool = False) -> Suite:
    """Load the suite ``config`` selects and confirm it when it is third-party.

    Args:
        config: an :class:`~lab.config.compose.EffectiveConfig`.
        stdin, stderr, ask: injectable for tests; default ``sys.stdin``,
            ``sys.stderr`` and :func:`input`.
        cached: take the suite an earlier command loaded when none of its
            files changed (:mod:`lab.suites.cache`); a third-party suite is
            confirmed all the same.

    Raises:
        SuiteError: the suite does not load (every problem listed).
        ConfigError: no location; ``suite.id`` differs from the file's
            ``suiteId``; a third-party suite not confirmed.
    """
    data = config.data
    if cached:
        from lab.suites.cache import load_suite_cached

        suite = load_suite_cached(suite_location(data))
    else:
        suite = load_suite(suite_location(data))
    wanted = data["suite"].get("id")
    if wanted and wanted != suite.id:
        fix = (f"select it with suite=external suite.path={data['suite']['path']} (or add suite.id={suite.id})"
               if data["suite"].get("path") else "name the directory after its suiteId")
        raise ConfigError(f"config: suite.id: {wanted!r} selects {suite.path}, whose suite.json "
                          f"has suiteId {suite.id!r}; {fix}")
    if is_third_party(suite.path):
        confirm_third_party(suite, yes=bool(data.get("yes")), stdin=stdin, stderr=stderr, ask=ask)
    return suite


def confirm_third_party(suite: Suite, *, yes: bool, stdin: TextIO | None = None,
                        stderr: TextIO | None = None, ask: Callable[[], str] | None = None) -> None:
    """Warn that ``suite`` runs code with the user's privileges, then ask (S6).

    The warning always goes to stderr. With ``yes`` the suite is accepted;
    on a terminal (``stdin.isatty()``) the user must answer ``y`` or ``yes``;
    without a terminal the suite is refused.

    Raises:
        ConfigError: refused (no terminal and no ``yes=true``, or not confirmed).
    """
    key = (str(suite.path), suite.digest)
    if key in _CONFIRMED:  # one command may prepare the same suite twice (variants)
        return
    stdin = sys.stdin if stdin is None else stdin
    stderr = sys.stderr if stderr is None else stderr
    where = f"suite {suite.id}"
    print(f"warning: {where} ({suite.path}) is not a bundled suite: its fixtures and verifier "
          f"commands are code you have not reviewed (they run in the sandbox; under sandbox=none "
          f"they would run with your privileges).", file=stderr, flush=True)
    if yes:
        _CONFIRMED.add(key)
        return
    if not _isatty(stdin):
        raise ConfigError(f"{where}: {suite.path} is a third-party suite and there is no terminal to "
                          f"confirm it; pass yes=true to run it")
    print(f"Run suite {suite.id} {suite.version} from {suite.path}? [y/N] ", end="", file=stderr,
          flush=True)
    try:
        answer = (ask or input)()
    except EOFError:
        answer = ""
    if answer.strip().lower() not in {"y", "yes"}:
        raise ConfigError(f"{where}: not confirmed; nothing was run (pass yes=true to skip the question)")
    _CONFIRMED.add(key)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream is not a terminal
        return False


def listed_suite_dirs(suite_dir: str | None) -> list[tuple[str, Path]]:
    """Suite directories for ``lab list``: ``("bundled" | "suite_dir", dir)``, each sorted by name.

    Raises:
        ConfigError: ``suite_dir`` is given but is not a directory.
    """
    found = [("bundled", p.parent) for p in sorted(paths.SUITES_DIR.glob("*/suite.json"))]
    if suite_dir:
        root = paths.from_root(suite_dir)
        if not root.is_dir():
            raise ConfigError(f"config: suite_dir: {root} is not a directory")
        found += [("suite_dir", p.parent) for p in sorted(root.glob("*/suite.json"))]
    return found
