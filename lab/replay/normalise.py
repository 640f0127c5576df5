"""Request normalisation for replaying programs we do not control (SPEC R2, G4).

An external agent sends requests that change between two identical runs:
session ids, cache keys, client-made item ids, the date, durations in tool
output. Before a request is fingerprinted or compared, :class:`RequestNormaliser`
rewrites it in four steps, in this order:

1. **Numbers are canonicalised**: a float with an integral value becomes the
   int (``1.0`` == ``1``, ``-0.0`` == ``0``); booleans stay booleans (``true``
   never equals ``1``).
2. **Volatile body fields are dropped** (:data:`DROPPED_FIELDS`, per API,
   extensible per agent preset). Paths use ``key``, ``a.b`` and ``[*]`` for
   every list item (``input[*].id``).
3. **Per-run paths** (the task copy) become ``<workspace>`` in every string.
4. **Volatile text is masked** in the conversation (:data:`TEXT_FIELDS`):
   first the task's ``replayNormalize`` rules (written against raw tool
   output), then the preset's rules, then :data:`VOLATILE_TEXT` (UUIDs, ISO
   dates and times, time zones, decimal durations, ``Chunk ID: <hex>``,
   ``msg_…``/``fco_…``/``call_…`` ids).

Why these fields (measured on Codex CLI, aider, mini-swe-agent):

* chat: ``user``, ``metadata``, ``safety_identifier`` carry per-session or
  per-user ids; ``prompt_cache_key`` is a per-session cache key. Kept:
  ``stream`` and ``stream_options`` (they decide the shape of the recorded
  answer), ``seed``, ``temperature``, ``tools``, ``model`` (configuration,
  stable between runs).
* responses: the same four plus ``client_metadata`` (Codex puts session
  ids there) and ``input[*].id`` (client-made item ids such as ``msg_…``,
  ``fco_…`` change every run; ids echoed from the provider are stable in
  replay but carry no meaning the order does not). Kept:
  ``previous_response_id`` (it comes from the recorded answer, so it is
  stable in replay, and it says which conversation continues), ``call_id``
  (masked in text only when it looks generated).

Masks apply to the conversation only, never to ``model`` (``gpt-4o-2024-08-06``
keeps its date) or to ``tools`` (tool schemas are configuration). A mask
makes matching more lenient, never stricter: an over-eager mask can only let
two requests match that differ in a masked id or time.

Canonical JSON (:func:`canonical_json`): sorted keys, no whitespace, UTF-8
kept as is; :func:`fingerprint` is the sha256 hex of it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import regex

from lab import patterns
from lab.errors import ConfigError

Api = Literal["chat", "responses"]
APIS: tuple[Api, ...] = ("chat", "responses")

DROPPED_FIELDS: Mapping[Api, tuple[str, ...]] = {
    "chat": ("user", "metadata", "prompt_cache_key", "safety_identifier"),
    "responses": ("prompt_cache_key", "client_metadata", "metadata", "user", "safety_identifier",
                  "input[*].id"),
}
"""Body fields removed before matching, per API (see the module docstring for why)."""

TEXT_FIELDS: Mapping[Api, tuple[str, ...]] = {
    "chat": ("messages",),
    "responses": ("input", "instructions"),
}
"""Top-level keys whose strings (at any depth) get the text masks."""


@dataclass(frozen=True)
class MaskRule:
    """One regex rewrite of volatile text.

    Attributes:
        pattern: compiled regex (``re`` for the lab's own rules, :mod:`lab.patterns` for a
            user's, matched under a time bound); replaced with ``re.sub`` semantics.
        replace: the replacement (``\\1`` group references allowed).
        name: a short label for documentation and error messages.
    """

    pattern: re.Pattern[str] | patterns.Pattern
    replace: str
    name: str = ""

    @classmethod
    def of(cls, pattern: str, replace: str, name: str = "") -> MaskRule:
        """Compile a rule.

        Raises:
            ConfigError: ``pattern`` is not a valid regex or ``replace``
                refers to a group it does not have (names the rule).
        """
        label = name or pattern
        try:
            compiled = patterns.compile_pattern(pattern)
            # "|" adds an empty alternative, so the template is expanded once (on "") and parsed:
            # a bad group reference fails here; the groups are the pattern's own.
            patterns.sub(patterns.compile_pattern(f"{pattern}|"), replace, "")
        except (ValueError, IndexError, regex.error, patterns.PatternTimeout) as exc:
            raise ConfigError(f"replay rule {label!r}: not a valid pattern/replace pair: {exc}") from None
        return cls(compiled, replace, name)

    def apply(self, text: str) -> str:
        """``text`` with every match replaced.

        Raises:
            PatternTimeout: a rule compiled by :meth:`of` (a user's pattern) ran past
                ``lab.patterns.MATCH_TIMEOUT_S`` on ``text``.
        """
        if isinstance(self.pattern, re.Pattern):  # the lab's own rules: linear, plain re
            return self.pattern.sub(self.replace, text)
        return patterns.sub(self.pattern, self.replace, text)


_TZ_AREAS = "Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc"

VOLATILE_TEXT: tuple[MaskRule, ...] = (
    MaskRule(re.compile(r"<(current_date|current_time|date|time|timezone|tz)>[^<\n]*</\1>"),
             r"<\1>…</\1>", "dated-tag"),
    MaskRule(re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
             "<uuid>", "uuid"),
    MaskRule(re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
                        r"(?:Z|[+-]\d{2}:?\d{2}\b)?"), "<datetime>", "iso-datetime"),
    MaskRule(re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<date>", "iso-date"),
    MaskRule(re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>", "clock-time"),
    MaskRule(re.compile(rf"\b(?:{_TZ_AREAS})/[A-Za-z_+\-]+(?:/[A-Za-z_\-]+)?\b"), "<tz>", "iana-zone"),
    MaskRule(re.compile(r"\b(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?\b"), "<tz>", "utc-offset"),
    MaskRule(re.compile(r"(Wall time: )\d+(?:\.\d+)?( ?(?:seconds|secs|s|ms))"), r"\1<duration>\2",
             "wall-time"),
    MaskRule(re.compile(r"\b\d+\.\d+ ?(?:ms|s|sec|secs|seconds)\b"), "<duration>", "decimal-duration"),
    MaskRule(re.compile(r"(Chunk ID: )[0-9A-Za-z]+"), r"\1<id>", "chunk-id"),
    MaskRule(re.compile(r"\b(msg|fco|fc|call|resp|rs|ws)_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}\b"), r"\1_<id>",
             "prefixed-id"),
    MaskRule(re.compile(r"\bchatcmpl-[A-Za-z0-9]{8,}\b"), "chatcmpl-<id>", "chatcmpl-id"),
)
"""Masks every request gets, applied in this order after the task's and the preset's rules."""


def task_rules(rules: Iterable[Mapping[str, Any]], *, source: str = "replayNormalize") -> tuple[MaskRule, ...]:
    """Compile a task's ``replayNormalize`` rules (``{"pattern": …, "replace": …}``).

    Raises:
        ConfigError: a rule without a string ``pattern``/``replace`` or with a
            bad regex; names ``<source>[i]``.
    """
    compiled = []
    for i, rule in enumerate(rules):
        pattern, repl = rule.get("pattern"), rule.get("replace")
        if not isinstance(pattern, str) or not isinstance(repl, str):
            raise ConfigError(f"{source}[{i}]: expected {{pattern: str, replace: str}}, got {dict(rule)!r}")
        compiled.append(MaskRule.of(pattern, repl, f"{source}[{i}]"))
    return tuple(compiled)


@dataclass(frozen=True)
class RequestNormaliser:
    """Rewrites a request body into its normalised form (see the module docstring).

    Attributes:
        drop: dropped field paths per API.
        text_fields: top-level keys whose strings are masked, per API.
        rules: preset and task rules, applied before :attr:`builtin_rules`.
        builtin_rules: the volatile-text masks (default :data:`VOLATILE_TEXT`).
        workspace: per-run paths replaced by ``<workspace>`` everywhere
            (longest first).
        redact: applied last to the whole normalised body (secrets and home
            paths out, :func:`lab.replay.scrub.request_scrubber`), so a live
            request matches its scrubbed recording.
    """

    drop: Mapping[Api, tuple[str, ...]] = field(default_factory=lambda: dict(DROPPED_FIELDS))
    text_fields: Mapping[Api, tuple[str, ...]] = field(default_factory=lambda: dict(TEXT_FIELDS))
    rules: tuple[MaskRule, ...] = ()
    builtin_rules: tuple[MaskRule, ...] = VOLATILE_TEXT
    workspace: tuple[str, ...] = ()
    redact: Callable[[Any], Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for api, paths in self.drop.items():
            for path in paths:
                _parse_path(path, where=f"drop[{api}]")

    def extended(self, *, drop: Mapping[Api, Iterable[str]] | None = None,
                 text_fields: Mapping[Api, Iterable[str]] | None = None,
                 rules: Iterable[MaskRule] = (), workspace: Iterable[str] = ()) -> RequestNormaliser:
        """A copy with more dropped fields, text fields, rules or workspace paths (for presets).

        Raises:
            ConfigError: a drop path that does not parse (names it).
        """
        merged_drop = {api: tuple(self.drop.get(api, ())) + tuple((drop or {}).get(api, ())) for api in APIS}
        merged_text = {api: tuple(self.text_fields.get(api, ())) + tuple((text_fields or {}).get(api, ()))
                       for api in APIS}
        return replace(self, drop=merged_drop, text_fields=merged_text, rules=self.rules + tuple(rules),
                       workspace=self.workspace + tuple(workspace))

    def __call__(self, api: Api, body: Mapping[str, Any]) -> dict[str, Any]:
        """The normalised copy of ``body`` (the input is not modified).

        Args:
            api: which wire format ``body`` is (``chat`` or ``responses``).
            body: the request body as the agent sent it (a JSON object).
        """
        result: dict[str, Any] = canonical(dict(body))
        for path in self.drop.get(api, ()):
            _drop(result, _parse_path(path, where="drop"))
        paths = sorted({p for p in self.workspace if p}, key=len, reverse=True)
        text_keys = set(self.text_fields.get(api, ()))
        rules = self.rules + self.builtin_rules
        for key in list(result):
            masks = rules if key in text_keys else ()
            result[key] = _rewrite(result[key], paths, masks)
        if self.redact is not None:
            result = self.redact(result)
        return result


def canonical(value: Any) -> Any:
    """``value`` with integral floats as ints (``-0.0`` → ``0``); bools and other values unchanged."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Canonical JSON of :func:`canonical` ``(value)``: sorted keys, no whitespace, UTF-8 kept."""
    return json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(value: Any) -> str:
    """sha256 hex (64 chars) of :func:`canonical_json` of a normalised request."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


_Step = str | None  # a key, or None for "every list item"


def _parse_path(path: str, *, where: str) -> tuple[_Step, ...]:
    if not re.fullmatch(r"[A-Za-z_][\w-]*(?:\[\*\]|\.[A-Za-z_][\w-]*)*", path):
        raise ConfigError(f"{where}: {path!r}: expected a field path like 'user' or 'input[*].id'")
    steps: list[_Step] = []
    for token in re.findall(r"\[\*\]|[A-Za-z_][\w-]*", path):
        steps.append(None if token == "[*]" else token)
    return tuple(steps)


def _drop(value: Any, steps: tuple[_Step, ...]) -> None:
    head, rest = steps[0], steps[1:]
    if head is None:
        if isinstance(value, list):
            for item in value:
                if rest:
                    _drop(item, rest)
        return
    if not isinstance(value, dict) or head not in value:
        return
    if rest:
        _drop(value[head], rest)
    else:
        del value[head]


def _rewrite(value: Any, paths: list[str], masks: tuple[MaskRule, ...]) -> Any:
    if isinstance(value, str):
        for path in paths:
            value = value.replace(path, "<workspace>")
        for rule in masks:
            value = rule.apply(value)
        return value
    if isinstance(value, list):
        return [_rewrite(v, paths, masks) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite(v, paths, masks) for k, v in value.items()}
    return value
