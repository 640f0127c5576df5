"""The lab's one reading of a provider's answer: usage, completeness, output and fault.

The built-in agent's provider (``lab.providers.openai_compat``) and the
gateway in front of command agents (``lab.gateway``) read every answer with
:func:`read_answer`, so the same wire gives the same figures and the same
fault on both paths (chat completions through ``lab.providers.wire``, the
Responses API through ``lab.providers.responses_wire``; faults classified by
``lab.providers.faults``).

Fault causes (``Fault.cause``), and whether a transient one is retried:

=======================  =====================================================  =======
``rate_limited``         HTTP 429, or an error object typed as a rate limit     yes
``server``               HTTP 408/409/5xx, an overloaded/server error object    yes
                         after HTTP 200 (JSON body, SSE event), ``response.failed``
``connect``              no answer: refused, reset, closed before a byte        yes
``auth``                 HTTP 401/403                                           no
``bad_request``          other 4xx, an error object typed as the request's      no
``incomplete_response``  a stream that ended without its terminal event         no
``invalid_response``     a body or event that is not an answer (not JSON …)     no
``response_too_large``   an answer past the size cap                            no
``timeout``              no complete answer in time                             no
=======================  =====================================================  =======
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from lab.errors import ProviderError, ProviderResponseInvalid
from lab.providers.base import Exchange, Usage
from lab.providers.faults import ServerError, error_cause, error_from_body, in_band_error, status_cause
from lab.providers.responses_wire import ResponsesAnswer, parse_response_events, parse_response_object
from lab.providers.wire import parse_exchange

Api = Literal["chat", "responses"]
RETRIED_CAUSES = frozenset({"rate_limited", "server", "connect"})


@dataclass(frozen=True)
class Fault:
    """Why an answer is not a usable answer.

    Attributes:
        cause: see the module docstring.
        shape: how it arrived, e.g. ``HTTP 503``, ``error in the stream after HTTP 200``.
        detail: one line, the server's words when it sent any.
        status: the HTTP status of the answer, when there was one.
        server: the server's own error, when it sent one.
    """

    cause: str
    shape: str
    detail: str
    status: int | None = None
    server: ServerError | None = None

    @property
    def message(self) -> str:
        """``shape: detail`` on one line."""
        return f"{self.shape}: {self.detail}"

    @property
    def retried(self) -> bool:
        """A transient fault: worth another attempt (``RETRIED_CAUSES``)."""
        return self.cause in RETRIED_CAUSES

    def to_json(self) -> dict[str, Any]:
        """``{"cause", "message", "status", "server"}`` (camelCase record shape)."""
        return {"cause": self.cause, "message": self.message, "status": self.status,
                "server": None if self.server is None else self.server.to_json()}


@dataclass(frozen=True)
class Answer:
    """What one answer says, as the lab reads it.

    Attributes:
        usage: the provider-reported usage, or None (not reported, or zeros
            that cannot be measurements: ``zero_usage``).
        zero_usage: 0 input tokens, or 0 output tokens beside output, were sent.
        complete: the answer ended as a well-formed answer ends (a finish
            reason / ``[DONE]`` with output; a final Responses event).
        text: the output text; on a fault, what arrived before it.
        tool_calls: tool calls the answer requested.
        truncated: the output limit cut the answer (``length`` /
            ``response.incomplete``).
        fault: the fault, or None for a usable answer.
    """

    usage: Usage | None
    zero_usage: bool
    complete: bool
    text: str
    tool_calls: int
    truncated: bool
    fault: Fault | None

    @property
    def empty(self) -> bool:
        """A usable, complete answer with no text and no tool call (and not cut by the output limit)."""
        return self.fault is None and self.complete and not self.truncated \
            and not self.text.strip() and not self.tool_calls


def status_fault(status: int, body: str) -> Fault:
    """The fault of an HTTP error answer (``body`` as text: the server's error object or words)."""
    server = error_from_body(body)
    cause = "auth" if status in (401, 403) else status_cause(status)
    return Fault(cause, f"HTTP {status}", server.describe(), status, server)


def in_band_fault(exchange: Exchange) -> Fault | None:
    """An error object inside an HTTP 2xx chat answer (JSON body or any SSE event), classified."""
    server = in_band_error(exchange)
    if server is None:
        return None
    where = "in the stream" if exchange.get("type") == "sse" else "in the body"
    status = exchange.get("status")
    return Fault(error_cause(server), f"error {where} after HTTP {status}", server.describe(), status, server)


def read_answer(api: Api, exchange: Exchange) -> Answer:
    """Read one exchange (``lab.providers.base`` shape; Responses streams may carry ``eventNames``).

    Never raises for what a server sends: a malformed answer is a fault
    (``invalid_response``).
    """
    status = int(exchange.get("status") or 200)
    if not 200 <= status < 300:
        return _failed(status_fault(status, _body_text(exchange)))
    if exchange.get("type") == "text":
        return _failed(Fault("invalid_response", f"HTTP {status}", "the body is not JSON", status))
    if api == "responses":
        return _responses(exchange, status)
    return _chat(exchange, status)


def _chat(exchange: Exchange, status: int) -> Answer:
    fault = in_band_fault(exchange)
    try:
        done = parse_exchange(exchange)
    except ProviderResponseInvalid as exc:
        return _failed(fault or Fault("invalid_response", "not an answer", str(exc), status))
    except ProviderError as exc:  # an in-band error: what came before it is kept
        partial = exc.partial or {}
        return Answer(None, False, False, str(partial.get("content") or ""), len(partial.get("toolCalls") or []),
                      False, fault or Fault("server", "error in the stream", str(exc), status))
    text = done.content or ""
    if fault is None and not done.complete:
        what = ("the stream carried no answer (no finish reason, content or tool call)"
                if not text and not done.tool_calls else "the response ended before its finish reason")
        fault = Fault("incomplete_response", "incomplete answer", what + (
            f"; the server reported: {done.stream_error}" if done.stream_error else ""), status)
    return Answer(done.usage, done.zero_usage, done.complete, text, len(done.tool_calls),
                  done.finish_reason == "length", fault)


def _responses(exchange: Exchange, status: int) -> Answer:
    if exchange.get("type") == "json":
        read: ResponsesAnswer = parse_response_object(exchange.get("body"))
    else:
        events = [str(e) for e in exchange.get("events") or []]
        read = parse_response_events(events, [str(n) for n in exchange.get("eventNames") or []] or None)
    fault: Fault | None = None
    if read.invalid is not None:
        fault = Fault("invalid_response", "not an answer", read.invalid, status)
    elif read.error is not None:
        where = "response.failed" if read.status == "failed" else "an error event in the stream"
        fault = Fault(error_cause(read.error), f"{where} after HTTP {status}", read.error.describe(),
                      status, read.error)
    elif not read.complete:
        fault = Fault("incomplete_response", "incomplete answer", "the stream ended without "
                      "response.completed, response.incomplete or response.failed", status)
    return Answer(read.usage, read.zero_usage, read.complete, read.text, read.tool_calls,
                  read.status == "incomplete", fault)


def _failed(fault: Fault) -> Answer:
    return Answer(None, False, False, "", 0, False, fault)


def _body_text(exchange: Exchange) -> str:
    if exchange.get("type") == "json":
        return json.dumps(exchange.get("body"), ensure_ascii=False)
    if exchange.get("type") == "text":
        return str(exchange.get("text") or "")
    return "\n".join(str(e) for e in exchange.get("events") or [])
