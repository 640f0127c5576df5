"""Content matching of replayed requests against recordings (SPEC R3, G4).

A program we do not control may not make its calls in exactly the recorded
order (retries, a title request first), so replay matches by content:
:class:`Matcher` keeps one queue of recordings per (API, fingerprint of the
normalised request) and serves each queue in recorded order. A request with
no recording left in its queue is a *divergence*: :class:`ReplayDivergence`
names the first differing JSON field path against the *nearest* unused
recording, the one that shares the longest prefix of the conversation
(``messages`` / ``input``), then differs in the fewest top-level fields,
then has the closest conversation length, then was recorded first.
Recordings never served are a divergence too (:meth:`Matcher.finish`).

Divergence paths (:func:`first_difference`):

* object keys in sorted order, joined by ``.`` (``messages[3].content``);
  a key that is not an identifier is quoted: ``metadata["x-y"]``, ``[""]``;
* conversation lists by index (``input[2].content[0].text``);
* ``tools`` and ``functions`` lists by tool name when every tool on both
  sides has a unique name (``function.name``, else ``name``), skipping
  the ``function`` wrapper: ``tools[edit_file].description`` (a name with
  characters other than letters, digits and ``_.:-`` is quoted); a tool only
  one side has is ``tools[name]``; the same tools in another order is
  ``tools``;
* values of different types at the top level: ``<body>``. The path is
  never empty.

Values are compared after :func:`lab.replay.normalise.canonical`: ``1.0``
equals ``1``, ``true`` never equals ``1``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lab.errors import CassetteMiss
from lab.providers.base import Exchange
from lab.replay.fingerprint import EXCERPT_CHARS, string_excerpts
from lab.replay.normalise import Api, canonical, canonical_json, fingerprint

ROOT = "<body>"
EXTRA_CALL = "(extra call)"
MISSING_CALL = "(call never made)"
CONVERSATION_KEYS = ("messages", "input")
KEYED_LISTS = ("tools", "functions")

DivergenceKind = Literal["mismatch", "extra_call", "unused"]


@dataclass(frozen=True)
class Difference:
    """The first place two JSON values differ.

    Attributes:
        path: never empty: ``messages[3].content``, ``tools[edit_file]``, ``<body>``.
        recorded: excerpt of the recorded value there, None when absent.
        actual: excerpt of the actual value there, None when absent.
    """

    path: str
    recorded: str | None
    actual: str | None


class ReplayDivergence(CassetteMiss):
    """Replay divergence: a request no recording answers, or a recording never requested.

    Belongs in ``lab.errors`` under ``CassetteMiss``.

    Attributes:
        kind: ``mismatch`` (compared with the nearest unused recording),
            ``extra_call`` (every recording was used) or ``unused`` (a
            recording was never requested).
        recording_index: the recording compared with or left unused, or None.
    """

    def __init__(self, message: str, *, call_index: int, field: str, kind: DivergenceKind,
                 recorded: str | None = None, actual: str | None = None,
                 recording_index: int | None = None) -> None:
        super().__init__(message, call_index=call_index, field=field, recorded=recorded, actual=actual)
        self.kind: DivergenceKind = kind
        self.recording_index = recording_index


@dataclass(frozen=True)
class Recording:
    """One recorded call.

    Attributes:
        index: position in the cassette (0-based).
        api: ``chat`` or ``responses``.
        request: the normalised request body.
        exchange: the recorded answer (``{"type": "json"|"sse", "status", …}``).
        fingerprint: sha256 of the canonical request; computed when empty.
    """

    index: int
    api: Api
    request: dict[str, Any]
    exchange: Exchange
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", fingerprint(self.request))


@dataclass
class Matcher:
    """Serves recordings by content, each fingerprint's queue in recorded order.

    Thread-safe: the gateway calls :meth:`take` from its event loop while the
    owner reads :attr:`unused` from another thread.

    Args:
        recordings: every recording of the task, in cassette order.
        source: names the cassette in messages (a path or ``suite/task``).
    """

    recordings: Iterable[Recording]
    source: str = "cassette"
    calls: int = field(default=0, init=False)
    _queues: dict[tuple[str, str], deque[Recording]] = field(default_factory=dict, init=False)
    _unused: dict[int, Recording] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.recordings = tuple(self.recordings)
        for rec in self.recordings:
            self._queues.setdefault((rec.api, rec.fingerprint), deque()).append(rec)
            self._unused[rec.index] = rec

    def take(self, api: Api, request: Mapping[str, Any]) -> Recording:
        """The next recording for this normalised request; marks it used.

        Args:
            api: the wire format of ``request``.
            request: the normalised request body.

        Raises:
            ReplayDivergence: no unused recording has this content (``mismatch``
                against the nearest one, or ``extra_call`` when none is left).
        """
        with self._lock:
            call_index = self.calls
            self.calls += 1
            queue = self._queues.get((api, fingerprint(request)))
            if queue:
                rec = queue.popleft()
                del self._unused[rec.index]
                return rec
            candidates = [r for r in self._unused.values() if r.api == api] or list(self._unused.values())
            if not candidates:
                raise ReplayDivergence(
                    f"{self.source}: call {call_index}: an extra {api} call: every one of the "
                    f"{len(self._all())} recorded calls was already served",
                    call_index=call_index, field=EXTRA_CALL, kind="extra_call")
            nearest = min(candidates, key=lambda r: _distance(r.request, request, r.index))
            diff = first_difference(nearest.request, request) or Difference(ROOT, None, None)
            raise ReplayDivergence(
                f"{self.source}: call {call_index}: request differs from recorded call {nearest.index} "
                f"at {diff.path}: recorded {diff.recorded!r}, actual {diff.actual!r}",
                call_index=call_index, field=diff.path, kind="mismatch", recorded=diff.recorded,
                actual=diff.actual, recording_index=nearest.index)

    @property
    def unused(self) -> list[Recording]:
        """Recordings never served, in cassette order."""
        with self._lock:
            return sorted(self._unused.values(), key=lambda r: r.index)

    def finish(self) -> None:
        """Check that every recording was served (call after the run).

        Raises:
            ReplayDivergence: ``unused``, naming the first recording never
                requested and how many were left.
        """
        left = self.unused
        if left:
            first = left[0]
            raise ReplayDivergence(
                f"{self.source}: recorded call {first.index} was never made "
                f"({len(left)} of {len(self._all())} recorded calls unused; the run made {self.calls})",
                call_index=self.calls, field=MISSING_CALL, kind="unused", recording_index=first.index)

    def _all(self) -> tuple[Recording, ...]:
        return tuple(self.recordings)


def _distance(recorded: Mapping[str, Any], actual: Mapping[str, Any], index: int) -> tuple[int, int, int, int]:
    """Sort key: smaller is nearer (longest shared conversation prefix first)."""
    rec_conv, act_conv = _conversation(recorded), _conversation(actual)
    prefix = 0
    for a, b in zip(rec_conv, act_conv):
        if not same(a, b):
            break
        prefix += 1
    differing = sum(1 for k in set(recorded) | set(actual)
                    if k not in recorded or k not in actual or not same(recorded[k], actual[k]))
    return -prefix, differing, abs(len(rec_conv) - len(act_conv)), index


def _conversation(body: Mapping[str, Any]) -> list[Any]:
    for key in CONVERSATION_KEYS:
        value = body.get(key)
        if isinstance(value, list):
            return value
    return []


def same(a: Any, b: Any) -> bool:
    """Type-strict JSON equality (``True`` is not ``1``; compare canonical values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def first_difference(recorded: Any, actual: Any) -> Difference | None:
    """The first differing JSON path between two values, or None when they are equal.

    Both are canonicalised first (integral floats as ints). See the module
    docstring for the path syntax.

    Returns:
        A :class:`Difference` with a non-empty path and excerpts of at most
        ~``2 * EXCERPT_CHARS`` characters, or None for equal values.
    """
    return _diff(canonical(recorded), canonical(actual), "")


def _diff(rec: Any, act: Any, path: str) -> Difference | None:
    if same(rec, act):
        return None
    where = path or ROOT
    if isinstance(rec, dict) and isinstance(act, dict):
        found = _diff_dicts(rec, act, path)
    elif isinstance(rec, list) and isinstance(act, list):
        found = _diff_keyed(rec, act, path) if _last_key(path) in KEYED_LISTS else None
        if found is None:
            found = _diff_lists(rec, act, path)
    elif isinstance(rec, str) and isinstance(act, str):
        found = Difference(where, *string_excerpts(rec, act))
    else:
        found = None
    return found or Difference(where, _excerpt(rec), _excerpt(act))


def _diff_dicts(rec: dict[str, Any], act: dict[str, Any], path: str) -> Difference | None:
    for key in sorted(set(rec) | set(act)):
        sub = _join(path, key)
        if key not in rec:
            return Difference(sub, None, _excerpt(act[key]))
        if key not in act:
            return Difference(sub, _excerpt(rec[key]), None)
        found = _diff(rec[key], act[key], sub)
        if found is not None:
            return found
    return None


def _diff_lists(rec: list[Any], act: list[Any], path: str) -> Difference | None:
    for i in range(max(len(rec), len(act))):
        sub = f"{path}[{i}]"
        if i >= len(rec):
            return Difference(sub, None, _excerpt(act[i]))
        if i >= len(act):
            return Difference(sub, _excerpt(rec[i]), None)
        found = _diff(rec[i], act[i], sub)
        if found is not None:
            return found
    return None


def _diff_keyed(rec: list[Any], act: list[Any], path: str) -> Difference | None:
    """Tools by name; None when some item has no unique name (then compared by index)."""
    rec_names, act_names = [_tool_name(x) for x in rec], [_tool_name(x) for x in act]
    names = rec_names + act_names
    if (None in names or len(set(rec_names)) < len(rec_names)
            or len(set(act_names)) < len(act_names)):
        return None
    rec_by = {n: x for n, x in zip(rec_names, rec)}
    act_by = {n: x for n, x in zip(act_names, act)}
    for name in rec_names:
        assert name is not None
        sub = f"{path}[{_quote(name)}]"
        if name not in act_by:
            return Difference(sub, _excerpt(rec_by[name]), None)
        if not same(rec_by[name], act_by[name]):
            return (_diff(_unwrap(rec_by[name]), _unwrap(act_by[name]), sub)
                    or Difference(sub, _excerpt(rec_by[name]), _excerpt(act_by[name])))
    for name in act_names:
        assert name is not None
        if name not in rec_by:
            return Difference(f"{path}[{_quote(name)}]", None, _excerpt(act_by[name]))
    return Difference(path, _excerpt(rec_names), _excerpt(act_names))  # same tools, another order


def _tool_name(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    fn = item.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        return str(fn["name"])
    if isinstance(item.get("name"), str):
        return str(item["name"])
    if isinstance(item.get("type"), str) and item["type"] != "function":
        return str(item["type"])  # a hosted tool (web_search …) is named by its type
    return None


def _unwrap(item: Any) -> Any:
    """``{"type": "function", "function": {…}}`` → one level, so paths read ``tools[x].description``."""
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        return {**{k: v for k, v in item.items() if k != "function"}, **item["function"]}
    return item


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_NAME = re.compile(r"[A-Za-z0-9_.:-]+")


def _join(path: str, key: str) -> str:
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _quote(name: str) -> str:
    return name if _BARE_NAME.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def _last_key(path: str) -> str:
    match = re.search(r"(?:^|\.)([A-Za-z_][A-Za-z0-9_]*)$", path)
    return match.group(1) if match else ""


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= 2 * EXCERPT_CHARS else text[: 2 * EXCERPT_CHARS] + "…"
