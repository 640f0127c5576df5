"""What a cassette may not hold: secrets (whole or split across stream deltas), home and temp paths (R4).

Every cassette, the built-in agent's and a command agent's alike, is written
through :func:`scrub_cassette`:

- **Paths.** Home and temporary directories become ``<home>`` and ``<tmp>``,
  any user's ``/home/<user>``, ``/Users/<user>``, ``C:\\Users\\<user>`` becomes
  ``<home>``, pytest's ``pytest-of-<user>`` becomes ``pytest-of-<user>``, in raw and
  JSON-escaped spellings (:mod:`lab.export.userpaths`, as in exports). Other
  paths are kept: a replay must see the same request as the recording.
- **Streams.** In a streamed answer the text of each delta channel (a
  chat choice's ``content``, a tool call's ``arguments``, a Responses item's
  ``delta`` events) is assembled, rewritten as one text (paths, then
  secrets), and its deltas re-cut to match (:mod:`lab.export.fragments`):
  no join of a cassette's fragments yields a key. An event is re-encoded
  only when one of its deltas changed.
- **Everything else** goes through the secret scanner string by string
  (:meth:`lab.export.secrets.SecretScanner.redact`).

Requests are scrubbed the same way before they are fingerprinted
(:func:`request_scrubber`), so a live request still matches its recording.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.errors import CassetteError
from lab.files import loads_json

if TYPE_CHECKING:
    from lab.export.secrets import SecretHit, SecretScanner

Step = str | int
CHANNEL_IDS = ("type", "item_id", "output_index", "content_index", "summary_index")
"""Top-level fields of a Responses event that tell its deltas' channels apart."""


def path_bases_of(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The home and temp directories of ``env`` as (prefix, placeholder) pairs, longest first."""
    from lab.export.userpaths import path_bases

    home = Path(env.get("HOME") or Path.home())
    return path_bases(None, home=home, tmp=Path(tempfile.gettempdir()))


def scrub_paths(value: Any, bases: list[tuple[str, str]]) -> Any:
    """A copy of ``value`` (JSON-able) with home and temp paths replaced in every string and key."""
    from lab.export.userpaths import user_paths

    if isinstance(value, str):
        return user_paths(value, bases)
    if isinstance(value, dict):
        return {user_paths(k, bases) if isinstance(k, str) else k: scrub_paths(v, bases) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_paths(v, bases) for v in value]
    return value


def request_scrubber(scanner: SecretScanner, bases: list[tuple[str, str]]) -> Callable[[Any], Any]:
    """The last step of request normalisation: paths, then secrets, replaced."""
    def scrub(request: Any) -> Any:
        return scanner.redact(scrub_paths(request, bases))[0]

    return scrub


def scrub_call(call: dict[str, Any], scanner: SecretScanner, bases: list[tuple[str, str]],
               *, field: str) -> tuple[dict[str, Any], list[SecretHit]]:
    """One cassette line (header or call) as written, and the secrets replaced in it."""
    from lab.export.secrets import SecretHit

    hits: list[SecretHit] = []
    exchange = call.get("exchange")
    if isinstance(exchange, dict) and exchange.get("type") == "sse":
        def rewrite(text: str) -> str:
            from lab.export.userpaths import user_paths

            redacted, kinds = scanner.redact_text(user_paths(text, bases))
            hits.extend(SecretHit(f"{field}.exchange.events", kind) for kind in kinds)
            return redacted

        call = {**call, "exchange": rewrite_stream(exchange, rewrite)}
    clean, more = scanner.redact(scrub_paths(call, bases), field=field)
    return clean, hits + more


def rewrite_stream(exchange: dict[str, Any], rewrite: Callable[[str], str]) -> dict[str, Any]:
    """``exchange`` (an SSE exchange) with the text of each delta channel rewritten as one text.

    Returns the same object when nothing changed; otherwise a copy whose
    changed events are re-encoded as compact JSON.
    """
    from lab.export.fragments import rewrite_fragments

    events = exchange.get("events")
    if not isinstance(events, list):
        return exchange
    parsed: dict[int, Any] = {}
    channels: dict[tuple[Any, ...], list[tuple[int, tuple[Step, ...]]]] = {}
    for position, data in enumerate(events):
        if not isinstance(data, str) or '"delta"' not in data:
            continue
        try:
            event = loads_json(data)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        parsed[position] = event
        ids = tuple(event.get(k) for k in CHANNEL_IDS)
        for channel, path in _delta_leaves(event, ()):
            channels.setdefault((ids, channel), []).append((position, path))
    changed: set[int] = set()
    for places in channels.values():
        fragments = [_get(parsed[position], path) for position, path in places]
        for (position, path), old, new in zip(places, fragments, rewrite_fragments(fragments, rewrite)):
            if new != old:
                _set(parsed[position], path, new)
                changed.add(position)
    if not changed:
        return exchange
    rewritten = [json.dumps(parsed[i], ensure_ascii=False, separators=(",", ":")) if i in changed else data
                 for i, data in enumerate(events)]
    return {**exchange, "events": rewritten}


def stream_texts(exchange: dict[str, Any]) -> list[str]:
    """The assembled text of each delta channel of an SSE exchange (what a join of its deltas gives)."""
    texts: list[str] = []

    def keep(text: str) -> str:
        texts.append(text)
        return text

    rewrite_stream(exchange, keep)
    return texts


def _delta_leaves(value: Any, path: tuple[Step, ...], labels: tuple[Any, ...] = (), inside: bool = False
                  ) -> Iterator[tuple[tuple[Any, ...], tuple[Step, ...]]]:
    """(channel, path) of every string under a ``delta`` key. The channel is the path with each
    list item named by its ``index`` field when it has one (a chat choice, a tool call)."""
    if isinstance(value, str):
        if inside:
            yield labels, path
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (str, dict, list)):
                yield from _delta_leaves(item, (*path, key), (*labels, key), inside or key == "delta")
    elif isinstance(value, list):
        for position, item in enumerate(value):
            label = item.get("index", position) if isinstance(item, dict) else position
            yield from _delta_leaves(item, (*path, position), (*labels, ("#", label)), inside)


def _get(value: Any, path: tuple[Step, ...]) -> str:
    for step in path:
        value = value[step]
    return str(value)


def _set(value: Any, path: tuple[Step, ...], text: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = text


def redact_cassette(header: dict[str, Any], calls: list[dict[str, Any]], *, env: Mapping[str, str],
                    credential_env: Iterable[str] = ()) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                 list[dict[str, str]]]:
    """The cassette as written: credential headers dropped, secrets in bodies replaced, home and
    temp paths scrubbed (R4; :mod:`lab.replay.scrub`).

    Request headers that carry credentials (``authorization``, ``api-key``,
    ``x-api-key``, ``x-goog-api-key``, cookies, any whose value holds a
    secret) are dropped and named in the call's ``droppedHeaders``; every
    secret in the header, requests and exchanges becomes its marker
    (``<secret:github-token>``), a key split across a stream's deltas
    included; home and temp paths (``env``'s ``HOME``, the temp dir, any
    ``/home/<user>``) become ``<home>``/``<tmp>``. Requests were already
    scrubbed by the normaliser, so fingerprints stay those of what is written.

    Returns:
        (header, calls, replacements) where each replacement is ``{"field", "kind"}``
        (never the value).
    """
    from lab.export.secrets import SecretScanner

    scanner = SecretScanner(env=env, credential_env=credential_env)
    bases = path_bases_of(env)
    header, hits = scrub_call(header, scanner, bases, field="header")
    written = []
    for call in calls:
        call = dict(call)
        if "requestHeaders" in call:
            kept, dropped = scanner.safe_headers(call["requestHeaders"])
            call["requestHeaders"] = kept
            if dropped:
                call["droppedHeaders"] = dropped
        call, call_hits = scrub_call(call, scanner, bases, field=f"calls[{call['index']}]")
        hits += call_hits
        written.append(call)
    return header, written, [h.to_json() for h in hits]


def check_secrets(header: dict[str, Any], calls: list[dict[str, Any]], *, source: str,
                  env: Mapping[str, str], credential_env: Iterable[str] = ()) -> None:
    """Refuse a cassette that holds a secret (R4).

    Scans the header and every call (request headers, request body,
    exchange, and the assembled text of each streamed delta channel, so a key
    split across deltas counts) for known key shapes (detect-secrets) and the
    exact values of credentials in ``env``. The writers call it after
    :func:`redact_cassette`, as a last guard.

    Raises:
        CassetteError: naming the call and the field of each hit, never the value.
    """
    from lab.export.secrets import SecretHit, SecretScanner, describe_hits

    scanner = SecretScanner(env=env, credential_env=credential_env)
    hits = scanner.scan(header, field="header")
    for call in calls:
        hits += scanner.scan(call, field=f"calls[{call['index']}]")
        exchange = call.get("exchange")
        if isinstance(exchange, dict) and exchange.get("type") == "sse":
            hits += [SecretHit(f"calls[{call['index']}].exchange.events", kind)
                     for text in stream_texts(exchange) for kind in scanner.kinds(text)]
    if hits:
        raise CassetteError(f"{source}: refused to write a cassette holding a secret: {describe_hits(hits)}")
