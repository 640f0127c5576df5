r"""Paths that name a person or a machine, in any text the lab writes out (SPEC E2, R4).

:func:`user_paths` replaces, wherever they appear:

- the known bases (:func:`path_bases`: the run's store directory, the temp
  dir, the home dir; longest first) by their placeholders ``<run-dir>``,
  ``<tmp>``, ``<home>``;
- any user's home directory: ``/home/<user>``, ``/Users/<user>`` (a user name
  with spaces included, ``/home/first last/work/x.py`` → ``<home>/work/x.py``)
  and ``C:\Users\<user>`` raw or JSON-escaped, by ``<home>``;
- pytest's per-user temporary directory ``pytest-of-<user>`` (under ``/tmp``,
  ``$TMPDIR`` or ``%TEMP%``), by ``pytest-of-<user>``;

and each of these also written with JSON-escaped slashes (``\/home\/alice\/x``,
as PHP's ``json_encode`` and some proxies write them; ``\\\/`` when escaped
twice) or percent-encoded ones (``%2Fhome%2Falice%2Fx`` in a URL): the
escaped path is read as a path, scrubbed, and written back escaped. Used by exports (which
then shorten any other absolute path, ``lab.export.bundle``) and by cassettes
(``lab.replay.scrub``). Every pass is one regex substitution, linear in the text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

# A home directory of any user, wherever it appears: /home/<user>, /Users/<user> (a user name
# may hold spaces when a "/" follows it), C:\Users\<user> raw or JSON-escaped (C:\\Users\\…).
HOME_DIR = re.compile(r"(?<![\w.~-])/(?:home|Users)/(?:[^/\s\"'<>]+(?: [^/\s\"'<>]+)+(?=/)|[^/\s\"'<>]+)")
WINDOWS_HOME = re.compile(r"(?<![\w])[A-Za-z]:(\\+)Users\1[^\\/\s\"'<>|]+(?: [^\\/\s\"'<>|]+)*(?=\1|[\s\"'<>|]|$)")
# pytest's tmp_path_factory root: <temp dir>/pytest-of-<user>/pytest-<n>/… (the user name ends at a
# path separator, raw or escaped, or at the end of the token).
PYTEST_USER_DIR = re.compile(r"(?<![\w.-])pytest-of-(?!<user>)[^/\\\s\"'<>|]+")
PYTEST_PLACEHOLDER = "pytest-of-<user>"
# A run of JSON-escaped path components: "\/" (or "\\\/", escaped twice: JSON inside JSON) then a
# component, repeated with the same escape; a URL scheme or drive before it is part of it
# (file:\/\/\/home\/…, C:\/Users\/…), bounded so each start costs a few characters at most.
ESCAPED_PATH = re.compile(r"(?<![\w.~:<>/\\-])(?:[A-Za-z][A-Za-z0-9+.-]{0,15}:)?(\\+)/[^\s\"'`<>|;,()\[\]{}\\]*"
                          r"(?:\1/[^\s\"'`<>|;,()\[\]{}\\]*)*")


# The same with percent-encoded slashes (a path in a URL's query: ?path=%2Fhome%2Falice%2Fx); a
# component ends at the next "%2F" (tried once per character: linear).
_PERCENT_PART = r"(?:(?!%2[Ff])[^\s\"'`<>|;,()\[\]{}\\/&?=#])*"
PERCENT_PATH = re.compile(r"(?<![\w.~:<>/%\\-])(?:[A-Za-z][A-Za-z0-9+.-]{0,15}(?::|%3[Aa]))?(%2[Ff])"
                          + _PERCENT_PART + r"(?:%2[Ff]" + _PERCENT_PART + r")*")


def path_bases(run_dir: Path | None, *, home: Path, tmp: Path) -> list[tuple[str, str]]:
    """(absolute prefix, placeholder) pairs, longest prefix first.

    Each base appears as given and with symlinks resolved (``/tmp`` may be
    ``/private/tmp``). The root directory is never a base; ``run_dir`` None
    leaves out ``<run-dir>``.
    """
    pairs = set()
    for base, placeholder in ((run_dir, "<run-dir>"), (tmp, "<tmp>"), (home, "<home>")):
        if base is None:
            continue
        for form in {str(base), str(base.resolve())}:
            form = form.rstrip("/")
            if form and os.path.isabs(form):
                pairs.add((form, placeholder))
    return sorted(pairs, key=lambda pair: (-len(pair[0]), pair[1]))


def user_paths(text: str, bases: list[tuple[str, str]], *, then: Callable[[str], str] | None = None) -> str:
    """``text`` with the known bases, home directories and pytest's user directory replaced
    (module docstring), in raw and JSON-escaped spellings alike; ``then`` (a further rewrite of
    plain paths, such as the export's shortening of other absolute paths) applied after, to both."""
    def plain(part: str) -> str:
        part = _plain_user_paths(part, bases)
        return then(part) if then is not None else part

    if "\\/" in text:
        text = ESCAPED_PATH.sub(lambda m: _escaped(m, plain), text)
    if "%2F" in text or "%2f" in text:
        text = PERCENT_PATH.sub(lambda m: _percent(m, plain), text)
    return plain(text)


def _percent(match: re.Match[str], plain: Callable[[str], str]) -> str:
    """A percent-encoded path read with plain slashes, rewritten, and encoded again."""
    escape = match.group(1)
    text = re.sub("%2[Ff]", "/", match.group(0))
    return plain(text).replace("/", escape)


def _escaped(match: re.Match[str], plain: Callable[[str], str]) -> str:
    """An escaped path read with plain slashes, rewritten, and escaped again the same way."""
    escape = match.group(1) + "/"
    return plain(match.group(0).replace(escape, "/")).replace("/", escape)


def _plain_user_paths(text: str, bases: list[tuple[str, str]]) -> str:
    if "/" not in text and "\\" not in text and "pytest-of-" not in text:
        return text
    for prefix, placeholder in bases:  # known bases first, whole: a user name may hold a space
        if prefix in text:
            text = re.sub(r"(?:(?<=file://)|(?<![\w.~:/<>\\-]))" + re.escape(prefix) + r"(?=[/\s\"'<>)\],;:\\]|$)",
                          placeholder, text)
    text = WINDOWS_HOME.sub("<home>", text)
    text = HOME_DIR.sub("<home>", text)
    return PYTEST_USER_DIR.sub(PYTEST_PLACEHOLDER, text)
