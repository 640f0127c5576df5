"""Cassettes: record provider traffic and replay it (SPEC R1–R5).

Format ``cassette/v1``: JSON Lines, one file per task at
``cassettes/<suite>/<task>.jsonl``. Line 1 is the header; each further line
is one provider call::

    {"schemaVersion": 1, "format": "cassette/v1", "type": "header", "suiteId": …,
     "taskId": …, "harnessVersion": …, "configHash": …, "model": …, "policy": {…}}
    {"schemaVersion": 1, "type": "call", "index": 0, "purpose": "main",
     "fingerprint": "<sha256 of the normalised request>", "request": {…}, "exchange": {…}}

Requests are stored normalised (per-run paths → ``<workspace>``, the task's
``replayNormalize`` rules applied to tool output, home and temp paths
replaced, secrets replaced by their markers), so a cassette holds no machine paths and replays on any machine.
Exchanges are stored as received, secrets redacted (a key split across a
stream's deltas too) and home and temp paths scrubbed (:func:`redact_cassette`).
Requests are matched as JSON values (``lab.replay.fingerprint``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.errors import CassetteError, CassetteMiss, ProviderError
from lab.files import NotRegularFile, dumps_line, loads_json, read_text, split_lines, write_atomic
from lab.providers.base import Exchange, Provider, Purpose
from lab.replay.fingerprint import EXCERPT_CHARS, json_equal, string_excerpts
from lab.replay.fingerprint import fingerprint as _fingerprint
from lab.replay.layout import cassette_path as cassette_path  # re-exported: where a recording lives

FORMAT = "cassette/v1"
SCHEMA_VERSION = 1
MAX_CASSETTE_BYTES = 256 * 1024
MAX_SUITE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Normaliser:
    """Rewrites the per-run parts of a request before it is fingerprinted (R2).

    Attributes:
        workspace: the run's workspace path; every occurrence (as given and
            resolved) becomes ``<workspace>``.
        rules: ``(pattern, replace)`` regex rules applied to tool output.
        aliases: other paths at which commands saw the workspace (the
            sandbox's ``/workspace``); each also becomes ``<workspace>``, so
            a recording replays under any sandbox backend.
        redact: replaces secrets by their markers (``<secret:github-token>``),
            applied last, so a live request matches its redacted recording.
    """

    workspace: Path | None = None
    rules: tuple[tuple[str, str], ...] = ()
    aliases: tuple[str, ...] = ()
    redact: Callable[[Any], Any] | None = None

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        paths = set()
        if self.workspace is not None:
            paths = {str(self.workspace), str(self.workspace.resolve())}
        paths |= {alias for alias in self.aliases if len(alias) > 1}
        compiled = [(re.compile(p), r) for p, r in self.rules]

        def fix(value: Any, tool_output: bool = False) -> Any:
            if isinstance(value, str):
                for p in sorted(paths, key=len, reverse=True):
                    value = value.replace(p, "<workspace>")
                if tool_output:
                    for pattern, replace in compiled:
                        value = pattern.sub(replace, value)
                return value
            if isinstance(value, list):
                return [fix(v, tool_output) for v in value]
            if isinstance(value, dict):
                is_tool = value.get("role") == "tool"
                return {k: fix(v, tool_output or (is_tool and k == "content")) for k, v in value.items()}
            return value

        result: dict[str, Any] = fix(request)
        if self.redact is not None:
            result = self.redact(result)
        return result


def fingerprint(normalised_request: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a normalised request (numbers as JSON numbers)."""
    return _fingerprint(normalised_request)


@dataclass
class Recorder:
    """A Provider wrapper that keeps every call for :func:`write_cassette`."""

    inner: Provider
    normalise: Normaliser
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def last_retries(self) -> list[dict[str, Any]]:
        """The wrapped provider's retries for its last call."""
        return list(getattr(self.inner, "last_retries", None) or [])

    def send(self, request: dict[str, Any], *, purpose: Purpose = "main",
             timeout_s: float | None = None) -> Exchange:
        try:
            exchange = self.inner.send(request, purpose=purpose, timeout_s=timeout_s)
        except ProviderError as exc:
            if exc.exchange is not None:  # the answer was the failure: keep it so it replays, as it was
                self._keep(request, purpose, exc.exchange, failed=recorded_error(exc))
            raise
        self._keep(request, purpose, exchange)
        return exchange

    def _keep(self, request: dict[str, Any], purpose: Purpose, exchange: Exchange,
              failed: dict[str, Any] | None = None) -> None:
        normalised = self.normalise(request)
        call = {"schemaVersion": SCHEMA_VERSION, "type": "call", "index": len(self.calls),
                "purpose": purpose, "fingerprint": fingerprint(normalised),
                "request": normalised, "exchange": exchange}
        if self.last_retries:  # the retries made before this answer replay as retry events
            call["retries"] = self.last_retries
        if failed is not None:
            call["failed"] = True
            call["error"] = failed
        headers = getattr(self.inner, "headers", None)
        if headers:  # extra request headers; credential ones are dropped when written
            call["requestHeaders"] = dict(headers)
        self.calls.append(call)


@dataclass
class Replayer:
    """A Provider that serves a cassette's exchanges in order (R3).

    Raises CassetteMiss from ``send`` when the normalised request differs
    from the recording, or when the harness makes more calls than recorded.
    After the run, :attr:`unused` names recorded calls never made.
    """

    header: dict[str, Any]
    calls: list[dict[str, Any]]
    normalise: Normaliser
    source: str = "cassette"
    position: int = 0
    name: str = "replay"
    last_retries: list[dict[str, Any]] = field(default_factory=list)

    def send(self, request: dict[str, Any], *, purpose: Purpose = "main",
             timeout_s: float | None = None) -> Exchange:
        index = self.position
        if index >= len(self.calls):
            raise CassetteMiss(
                f"{self.source}: call {index}: the harness made a call the recording does not have "
                f"(recorded {len(self.calls)} calls)", call_index=index, field="(extra call)")
        recorded = self.calls[index]
        actual = self.normalise(request)
        if recorded.get("purpose", "main") != purpose:
            raise CassetteMiss(f"{self.source}: call {index}: purpose differs: recorded "
                               f"{recorded.get('purpose')!r}, actual {purpose!r}",
                               call_index=index, field="purpose",
                               recorded=str(recorded.get("purpose")), actual=purpose)
        if not json_equal(actual, recorded["request"]):  # JSON equality: 1 == 1.0, true != 1
            path, rec, act = divergence(recorded["request"], actual)
            raise CassetteMiss(f"{self.source}: call {index}: request differs at {path}: "
                               f"recorded {rec!r}, actual {act!r}",
                               call_index=index, field=path, recorded=rec, actual=act)
        self.position += 1
        self.last_retries = [dict(r) for r in recorded.get("retries") or []]
        if recorded.get("failed") and isinstance(recorded.get("error"), dict):
            raise replayed_error(recorded["error"], recorded["exchange"])
        exchange: Exchange = recorded["exchange"]
        return exchange

    @property
    def unused(self) -> int:
        """Recorded calls the harness never made."""
        return len(self.calls) - self.position


def recorded_error(exc: ProviderError) -> dict[str, Any]:
    """A provider failure as a cassette keeps it: ``{"cause", "message", "status", "server", "partial"}``."""
    return {"cause": exc.cause, "message": str(exc), "status": exc.status, "server": exc.server,
            "partial": exc.partial}


def replayed_error(error: dict[str, Any], exchange: Exchange) -> ProviderError:
    """The failure :func:`recorded_error` kept, raised again with the same class, cause, message and partial."""
    from lab import errors
    from lab.providers.transfer import ResponseTooLarge

    classes: dict[str, type[ProviderError]] = {
        "rate_limited": errors.ProviderRateLimited, "auth": errors.ProviderAuthError,
        "timeout": errors.ProviderTimeout, "invalid_response": errors.ProviderResponseInvalid,
        "response_too_large": ResponseTooLarge}
    cause = str(error.get("cause") or "provider")
    server = error.get("server")
    status = error.get("status")
    exc = classes.get(cause, ProviderError)(str(error.get("message") or cause), cause=cause,
                                            status=status if isinstance(status, int) else None,
                                            server=server if isinstance(server, dict) else None,
                                            partial=error.get("partial") if isinstance(error.get("partial"), dict) else None)
    exc.exchange = exchange
    return exc


def divergence(recorded: Any, actual: Any) -> tuple[str, str | None, str | None]:
    """:func:`first_difference` with a path that is never empty.

    A difference at the root (two values of different JSON types) is named
    ``(request)``. Values are compared as JSON (``1`` equals ``1.0``,
    ``true`` differs from ``1``).
    """
    path, rec, act = first_difference(recorded, actual)
    return path or "(request)", rec, act


def first_difference(recorded: Any, actual: Any, path: str = "") -> tuple[str, str | None, str | None]:
    """The first differing JSON path and excerpts of both values around it.

    List items that carry a name (``tools[].function.name``) are keyed by it:
    ``tools[edit_file].description``; other list items by index:
    ``messages[3].content``. Returns (path, recorded excerpt, actual excerpt);
    an excerpt is None where the value is absent.
    """
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in sorted(set(recorded) | set(actual)):
            sub = f"{path}.{key}" if path else key
            if key not in recorded:
                return sub, None, _excerpt(actual[key])
            if key not in actual:
                return sub, _excerpt(recorded[key]), None
            if not json_equal(recorded[key], actual[key]):
                return first_difference(recorded[key], actual[key], sub)
    elif isinstance(recorded, list) and isinstance(actual, list):
        for i in range(max(len(recorded), len(actual))):
            if i >= len(recorded):
                return f"{path}[{_item_key(actual[i], i)}]", None, _excerpt(actual[i])
            if i >= len(actual):
                return f"{path}[{_item_key(recorded[i], i)}]", _excerpt(recorded[i]), None
            if not json_equal(recorded[i], actual[i]):
                key = _item_key(recorded[i], i)
                if key != _item_key(actual[i], i):
                    key = str(i)
                return first_difference(_unwrap(recorded[i]), _unwrap(actual[i]), f"{path}[{key}]")
    elif isinstance(recorded, str) and isinstance(actual, str):
        return path, *string_excerpts(recorded, actual)
    return path, _excerpt(recorded), _excerpt(actual)


def _item_key(item: Any, index: int) -> str:
    if isinstance(item, dict):
        fn = item.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and item.get("type") == "function":
            return str(fn["name"])
    return str(index)


def _unwrap(item: Any) -> Any:
    """Tool definitions are keyed by name, so ``tools[x].description`` skips ``.function``."""
    if isinstance(item, dict) and item.get("type") == "function" and isinstance(item.get("function"), dict):
        return {**{k: v for k, v in item.items() if k != "function"}, **item["function"]}
    return item


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 2 * EXCERPT_CHARS else text[: 2 * EXCERPT_CHARS] + "…"


def read_cassette(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read a cassette file into (header, calls).

    Raises:
        CassetteError: missing file, bad JSON (names the line), wrong format,
            or a version newer than this lab.
    """
    try:
        lines = split_lines(read_text(path))  # a FIFO or device in its place is refused, never opened blocking
    except FileNotFoundError:
        raise CassetteError(f"{path}: no cassette for this task; record one with `doit record`") from None
    except NotRegularFile as exc:
        raise CassetteError(f"{path}: cannot read: {exc.strerror}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"{path}: cannot read: {exc}") from None
    import jsonschema

    from lab.schemas import load_schema

    validator = jsonschema.Draft202012Validator(load_schema("cassette"))
    records = []
    for n, line in enumerate(lines, 1):
        try:
            record = loads_json(line)
        except json.JSONDecodeError as exc:
            raise CassetteError(f"{path}: line {n}: not JSON: {exc.msg}") from None
        if n == 1 and (not isinstance(record, dict) or record.get("format") != FORMAT):
            raise CassetteError(f"{path}: line 1: expected a {FORMAT} header")
        if n == 1 and isinstance(record.get("schemaVersion"), int) and record["schemaVersion"] > SCHEMA_VERSION:
            raise CassetteError(f"{path}: schemaVersion {record['schemaVersion']!r} is newer than this lab "
                                f"reads ({SCHEMA_VERSION})")
        error = jsonschema.exceptions.best_match(validator.iter_errors(record))
        if error is not None:
            where = ".".join(map(str, error.absolute_path)) or "(line)"
            kind = "header" if n == 1 else "call"
            raise CassetteError(f"{path}: line {n}: not a valid {kind}: {where}: {error.message[:160]}")
        if n > 1 and record.get("type") != "call":
            raise CassetteError(f"{path}: line {n}: expected a call with fingerprint, request and exchange")
        records.append(record)
    if not records:
        raise CassetteError(f"{path}: line 1: expected a {FORMAT} header")
    return records[0], records[1:]


def dump_cassette(header: dict[str, Any], calls: list[dict[str, Any]]) -> bytes:
    """The bytes of a cassette: one canonical JSON object per line (byte-deterministic)."""
    return "".join(dumps_line(rec) for rec in [header, *calls]).encode("utf-8")


def write_cassette(path: Path, data: bytes) -> None:
    """Write a cassette atomically after the size limits (R4).

    Call :func:`redact_cassette` first.

    Raises:
        CassetteError: over 256 KB for the file, or over 2 MB for the suite
            directory once written; nothing is written then.
    """
    if len(data) > MAX_CASSETTE_BYTES:
        raise CassetteError(f"{path}: cassette is {len(data)} bytes, over the {MAX_CASSETTE_BYTES}-byte limit")
    siblings = sum(p.stat().st_size for p in path.parent.glob("*.jsonl") if p != path) \
        if path.parent.is_dir() else 0
    if siblings + len(data) > MAX_SUITE_BYTES:
        raise CassetteError(f"{path.parent}: cassettes would total {siblings + len(data)} bytes, "
                            f"over the {MAX_SUITE_BYTES}-byte limit per suite")
    write_atomic(path, data)
