r"""Export one run as a shareable JSON bundle (SPEC E1–E3).

``lab export REPORT out=FILE [force=true]`` writes one bundle
``{"schemaVersion": 1, "report": <report.json>, "runs": [<runs.jsonl records>],
"markdown": <report.md>}`` after two passes over every string in it. REPORT is
what ``lab compare`` takes (:func:`lab.store.resolve_report`): a run id, a
``report.json`` or the directory holding one; ``runs.jsonl`` and ``report.md``
are read beside the report file.

1. **Placeholders** (E2). An absolute path becomes ``<run-dir>/…`` under the
   run's store directory (``<data>/<suite>/<store key>``; :func:`lab.store.store_dir`,
   none for a report copied out of the run store), ``<tmp>/…`` under the
   temp dir, ``<home>/…`` under the home directory (the longest matching
   base wins, so a run dir inside the home dir is ``<run-dir>``). Any
   user's home directory, wherever it appears, is ``<home>`` too:
   ``/home/<user>``, ``/Users/<user>`` (a user name with spaces included,
   ``/home/first last/work/x.py`` → ``<home>/work/x.py``) and
   ``C:\Users\<user>`` raw or JSON-escaped, and pytest's ``pytest-of-<user>``
   temporary directory (:mod:`lab.export.userpaths`), in paths written with
   plain or JSON-escaped slashes (``\/home\/alice\/…``). Any other absolute path keeps
   its last two components after ``<path>`` (``/opt/ci/runner-7/src/a.py``
   → ``<path>/src/a.py``; ``/etc/hosts`` → ``<path>/hosts``), so the file
   stays recognisable while the directories above it, which may name a
   machine or a person, do not survive. A ``provider`` value that is not a plain identifier
   (e.g. an endpoint URL) becomes ``custom-endpoint``, wherever it appears
   (the Markdown repeats it).
2. **Secret scan** (E3, :mod:`lab.export.secrets`) of the scrubbed bundle. On a hit
   nothing is written and the error names the field path, never the value.

The file is written atomically and never overwrites an existing one unless
``force=True``.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.errors import LabError
from lab.export.secrets import SecretHit, SecretScanner, describe_hits
from lab.export.userpaths import path_bases as path_bases  # re-exported: the export's path bases
from lab.export.userpaths import user_paths
from lab.files import dumps_json, loads_json, read_text, split_lines, write_atomic
from lab.store import load_report, read_report

BUNDLE_SCHEMA_VERSION = 1
CUSTOM_ENDPOINT = "custom-endpoint"
PLAIN_IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
# An absolute POSIX path inside any text: a "/" not preceded by a word character, a dot or
# another path/URL character (so "a/b", "https://x/y", "</div>" and "<tmp>/x" are left alone),
# or the path of a file:// URL. It ends before whitespace, quotes, brackets and trailing punctuation.
ABSOLUTE_PATH = re.compile(r"(?:(?<=file://)|(?<![\w.~:/<>\\-]))/[^\s\"'`<>|;,()\[\]{}]*[^\s\"'`<>|;,()\[\]{}.:]")
TAIL_PARTS = 2  # an unknown absolute path keeps this many trailing components
API_KEY_ENV_LINE = re.compile(r"^api_key_env:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


class ExportError(LabError):
    """The export was refused: the output exists, or the bundle holds a secret.

    Attributes:
        hits: the secrets found (field path and kind, never the value); [] otherwise.
    """

    def __init__(self, message: str, hits: list[SecretHit] | None = None) -> None:
        super().__init__(message)
        self.hits = list(hits or [])


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: ``out`` (the bundle file), its size in bytes and the run count,
    and what it read: the report's ``run_id`` (its header's ``runId``) and ``report_dir``."""

    out: Path
    size_bytes: int
    runs: int
    run_id: str
    report_dir: Path


def placeholder_paths(text: str, bases: list[tuple[str, str]]) -> str:
    """``text`` with every absolute path replaced by its placeholder (module docstring, rule 1)."""
    return user_paths(text, bases, then=_shorten)


def _shorten(text: str) -> str:
    """Any other absolute path: ``<path>/`` and its last two components."""
    def replace(match: re.Match[str]) -> str:
        parts = [p for p in match.group(0).split("/") if p]
        tail = parts[-TAIL_PARTS:] if len(parts) > TAIL_PARTS else parts[1:]
        return "/".join(["<path>", *tail])

    return ABSOLUTE_PATH.sub(replace, text) if "/" in text else text


def custom_providers(value: Any) -> set[str]:
    """Every ``provider`` value in ``value`` that is not a plain identifier (an endpoint URL, …)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "provider" and isinstance(item, str) and not PLAIN_IDENTIFIER.match(item):
                found.add(item)
            else:
                found |= custom_providers(item)
    elif isinstance(value, list):
        for item in value:
            found |= custom_providers(item)
    return found


def scrub(value: Any, bases: list[tuple[str, str]], providers: set[str] | None = None) -> Any:
    """A copy of ``value`` with placeholders for paths and custom provider ids (E2).

    Args:
        value: a JSON-able value.
        bases: from :func:`path_bases`.
        providers: custom provider ids to replace wherever they appear (the
            Markdown repeats them); default :func:`custom_providers` of ``value``.
    """
    if providers is None:
        providers = custom_providers(value)
    if isinstance(value, str):
        for provider in sorted(providers, key=len, reverse=True):
            value = value.replace(provider, CUSTOM_ENDPOINT)
        return placeholder_paths(value, bases)
    if isinstance(value, dict):
        return {key: scrub(item, bases, providers) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item, bases, providers) for item in value]
    return value


def read_bundle(report_dir: Path, report: dict[str, Any] | None = None) -> dict[str, Any]:
    """The unscrubbed bundle of one report directory.

    Args:
        report_dir: holds ``runs.jsonl`` and ``report.md`` (and ``report.json``).
        report: the report document when already read (:func:`lab.store.load_report`);
            default: ``report_dir/report.json``, read and checked.

    Raises:
        ReportError / RecordVersionError: report.json is missing or invalid.
        ExportError: runs.jsonl or report.md cannot be read.
    """
    if report is None:
        report = read_report(report_dir / "report.json")
    try:
        lines = split_lines(read_text(report_dir / "runs.jsonl"))
        runs = [loads_json(line) for line in lines if line.strip()]
        markdown = read_text(report_dir / "report.md")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(f"{report_dir}: cannot read the run records or report.md: {exc}") from exc
    return {"schemaVersion": BUNDLE_SCHEMA_VERSION, "report": report, "runs": runs, "markdown": markdown}


def credential_env_names(run_dir: Path | None, provider_conf_dir: Path | None = None) -> list[str]:
    """Variable names holding API keys: the run's ``provider.api_key_env`` (from
    ``run_dir/config.json``; none when ``run_dir`` is None) and every provider config's."""
    names = set()
    try:
        config = loads_json(read_text(run_dir / "config.json")) if run_dir is not None else {}
        name = ((config.get("config") or {}).get("provider") or {}).get("api_key_env")
        if isinstance(name, str) and name:
            names.add(name)
    except (OSError, ValueError, AttributeError):
        pass  # no or unreadable config.json: the suffix rule still covers *_KEY, *_TOKEN …
    if provider_conf_dir is not None:
        for path in sorted(provider_conf_dir.glob("*.yaml")):
            names.update(API_KEY_ENV_LINE.findall(path.read_text(encoding="utf-8")))
    return sorted(names)


def export_run(ref: str, out: Path, *, data: Path, env: Mapping[str, str], force: bool = False,
               redact: bool = False,
               home: Path | None = None, tmp: Path | None = None,
               credential_env: Iterable[str] = ()) -> ExportResult:
    """Write the scrubbed, secret-checked bundle of the report ``ref`` names to ``out``.

    Args:
        ref: what ``lab compare`` takes (:func:`lab.store.resolve_report`): a run id
            found in the run store, a ``report.json``, or the directory holding one
            (a variants command's ``<command>/<label>/`` copy too).
        out: the bundle file to write.
        data: the run store root (``lab.paths.data_dir()``).
        env: the environment (home dir, credentials to look for).
        force: overwrite an existing ``out``.
        home: the home directory (default ``$HOME`` from ``env``, else ``Path.home()``).
        tmp: the temp directory (default ``tempfile.gettempdir()``).
        credential_env: extra variable names that hold credentials.

    Raises:
        ReportError: no such report, a run id naming several (give a path), or
            not a valid report.
        ExportError: ``out`` exists (without ``force``) or is a directory, or
            the bundle holds a secret (``.hits``); nothing is written.
    """
    from lab import paths

    stored = load_report(ref, data)
    if out.is_dir():
        raise ExportError(f"{out}: is a directory; give out=FILE")
    if out.exists() and not force:
        raise ExportError(f"{out}: exists; pass force=true to overwrite")
    run_dir = stored.run_dir
    home = home or Path(env.get("HOME") or Path.home())
    bases = path_bases(run_dir, home=home, tmp=tmp or Path(tempfile.gettempdir()))
    bundle = scrub(read_bundle(stored.report_dir, stored.doc), bases)
    names = [*credential_env, *credential_env_names(run_dir, paths.CONF_DIR / "provider")]
    scanner = SecretScanner(env=env, credential_env=names)
    hits = scanner.scan(bundle)
    if hits and redact:  # the user asked for markers (<secret:github-token>) instead of a refusal
        bundle, hits = scanner.redact(bundle)[0], []
    if hits:
        raise ExportError(f"refused: the bundle holds {len(hits)} likely secret(s): {describe_hits(hits)}; "
                          f"nothing written to {out} (redact=true replaces them by markers)", hits)
    data_bytes = dumps_json(bundle).encode("utf-8")
    write_atomic(out, data_bytes)
    return ExportResult(out=out, size_bytes=len(data_bytes), runs=len(bundle["runs"]),
                        run_id=str(stored.doc["header"].get("runId") or stored.report_dir.name),
                        report_dir=stored.report_dir)
