"""Provider faults by kind, whatever shape they arrive in: an HTTP status or an error object.

A server says "overloaded" or "rate limited" either with an HTTP status
(503, 429) or with an error object inside an HTTP 200 answer, as a JSON body
or as an SSE event in the middle of a stream. The lab treats the same fault
the same way whatever its shape (``docs/faults.md``):

| cause          | from a status               | from an error object's ``type`` / ``code``       | retried |
|----------------|-----------------------------|--------------------------------------------------|---------|
| ``rate_limited`` | 429                       | ``rate_limit…``, ``too_many…``, code 429          | yes     |
| ``server``     | 408, 409, 5xx               | ``server_error``, ``overloaded…``, ``internal…``, ``unavailable``, ``timeout``, ``api_error``, code 408/409/5xx, or no recognisable type | yes |
| ``bad_request`` | other 4xx                  | ``invalid…``, ``not_found…``, ``permission…``, ``auth…``, ``context_length…``, ``content_filter``/``content_policy…``, ``unsupported…``, other 4xx codes | no |

408 and 409 are retried as the OpenAI SDKs retry them. The server's own
words are kept: ``ServerError`` holds its ``message`` (one line, cut to
``MESSAGE_CHARS``), ``type`` and ``code``.

Source of the error shape: https://platform.openai.com/docs/guides/error-codes
(``{"error": {"message", "type", "param", "code"}}``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lab.console import visible
from lab.files import loads_json

Cause = Literal["rate_limited", "server", "bad_request"]

MESSAGE_CHARS = 300
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
RETRY_AFTER_CAP_S = 30.0
RETRIED_STATUSES = frozenset({408, 409, 429})
_RATE_WORDS = ("rate_limit", "ratelimit", "too_many")
_BAD_WORDS = ("invalid", "not_found", "permission", "auth", "context_length", "content_filter",
              "content_policy", "unsupported", "bad_request")


@dataclass(frozen=True)
class ServerError:
    """The server's own account of a failure.

    Attributes:
        message: its message on one line, cut to ``MESSAGE_CHARS`` characters
            (with ``…``); ``(empty body)`` when there was none.
        type: the error object's ``type`` (OpenAI), or None.
        code: its ``code`` as text (``"500"``, ``"invalid_api_key"``), or None.
    """

    message: str
    type: str | None = None
    code: str | None = None

    def describe(self) -> str:
        """``message (type T, code C)``, labels only when present; one line."""
        labels = [f"{name} {value}" for name, value in (("type", self.type), ("code", self.code)) if value]
        return self.message + (f" ({', '.join(labels)})" if labels else "")

    def to_json(self) -> dict[str, str | None]:
        return {"message": self.message, "type": self.type, "code": self.code}


def retried_status(status: int) -> bool:
    """Whether an HTTP status is a transient fault worth another attempt (408, 409, 429, 5xx)."""
    return status in RETRIED_STATUSES or status >= 500


def status_cause(status: int) -> Cause:
    """``rate_limited`` for 429, ``server`` for the other retried statuses, else ``bad_request``."""
    if status == 429:
        return "rate_limited"
    return "server" if retried_status(status) else "bad_request"


def error_cause(error: ServerError) -> Cause:
    """Classify an error object by its ``code`` (numeric) or the words of its ``type`` and ``code``."""
    if error.code is not None and error.code.isdigit():
        return status_cause(int(error.code))
    words = f"{error.type or ''} {error.code or ''}".lower()
    if any(w in words for w in _RATE_WORDS):
        return "rate_limited"
    if any(w in words for w in _BAD_WORDS):
        return "bad_request"
    return "server"  # overloaded, server_error, api_error … or an error the server did not type


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (delta-seconds form only), or None.

    Args:
        headers: the answer's headers (case-insensitive mapping, e.g. ``httpx.Headers``).
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue  # an HTTP-date: fall back to the backoff
        if value >= 0:
            return value
    return None


def backoff_s(attempt: int, retry_after: float | None) -> float:
    """The wait before retry number ``attempt`` (1-based): the server's ``Retry-After`` capped at
    ``RETRY_AFTER_CAP_S``, else a deterministic exponential backoff (0.5 s, 1 s, 2 s … capped at 8 s)."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    return float(min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` with every whitespace run (line breaks too) folded to a space, control
    characters escaped (:func:`lab.console.visible`), cut to ``limit``."""
    folded = visible(" ".join(text.split()))
    return folded if len(folded) <= limit else folded[:limit] + "…"


def error_from_object(obj: Any) -> ServerError | None:
    """The error an answer object carries: ``{"error": {...}}``, ``{"error": "text"}``,
    or an Anthropic-style ``{"type": "error", "error": {...}}``; None when it carries none."""
    if not isinstance(obj, dict) or not obj.get("error"):
        return None
    error = obj["error"]
    if not isinstance(error, dict):
        return ServerError(one_line(str(error)))
    message = error.get("message")
    text = message if isinstance(message, str) and message.strip() else json.dumps(error, ensure_ascii=False)
    return ServerError(one_line(text), _label(error.get("type")), _label(error.get("code")))


def error_from_body(text: str) -> ServerError:
    """The server's error from an HTTP error body: its error object, else the body itself."""
    try:
        found = error_from_object(loads_json(text))
    except ValueError:
        found = None
    if found is not None:
        return found
    return ServerError(one_line(text) if text.strip() else "(empty body)")


def in_band_error(exchange: dict[str, Any]) -> ServerError | None:
    """An error object inside an HTTP 2xx exchange (JSON body or any SSE event), else None."""
    if exchange.get("type") == "json":
        return error_from_object(exchange.get("body"))
    for data in exchange.get("events") or []:
        if not isinstance(data, str) or '"error"' not in data:
            continue
        try:
            found = error_from_object(loads_json(data))
        except ValueError:
            continue  # not JSON: the parser names it
        if found is not None:
            return found
    return None


def _label(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, (dict, list)):
        return None
    return one_line(str(value), 80)
