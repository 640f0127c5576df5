"""OpenAI-compatible chat-completions provider over httpx, streaming via httpx-sse.

Every failure leaves as a ``lab.errors.ProviderError`` raised ``from`` the
httpx exception (no httpx exception escapes):

```
httpx.TimeoutException, wall budget spent,
  the call's deadline passed mid-body         ProviderTimeout
connection refused / reset / closed before
  any answer, retries exhausted               ProviderError(cause="connect")
connection lost mid-body                      ProviderError(cause="connect")
HTTP 401 / 403                                ProviderAuthError
HTTP 429, retries exhausted                   ProviderRateLimited
HTTP 408, 409, 5xx, retries exhausted         ProviderError(cause="server")
other HTTP status (400, 404, 3xx …)           ProviderError(cause="bad_request")
body or stream that is not a chat completion  ProviderResponseInvalid
answer larger than max_response_bytes         ResponseTooLarge (cause "response_too_large")
{"error": …} inside an HTTP 200 answer or
  in the middle of a stream                   classified by its type/code like a status
                                              (lab.providers.faults): retried, or bad_request
```

Errors from the server keep its words: ``status`` and ``server``
(``{"message", "type", "code"}``) on the ProviderError, and the message
names type and code on one line.

Retries: transient faults (429, 408, 409, 5xx, an overloaded or rate-limit
error object in a 200 answer or a stream, a connection refused or reset
before any answer) are retried at most ``max_retries`` times, after
``Retry-After``/``retry-after-ms`` (capped at 30 s) or else a deterministic
exponential backoff (0.5 s, 1 s, 2 s … capped at 8 s). A retry whose wait
would pass the call's deadline is not made. Each retry is recorded in
``last_retries`` (reset at the start of every ``send``) as
``{"attempt": int, "status": int | None, "cause": str, "reason": str,
"delay_s": float}``; the exchange itself stays exactly what the server sent.
Timeouts are not retried: a timeout has already spent the call's budget.

Deadline: ``timeout_s`` (or the run's remaining wall budget, if smaller) is
the whole call's limit, retries and streaming included, whatever the server
sends: response headers trickling in, ``100 Continue`` repeated
(:mod:`lab.providers.deadline`), keep-alive comments and a body trickling in
byte by byte (:mod:`lab.providers.transfer`) end at the deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
from httpx_sse import SSEError

from lab.errors import (
    ConfigError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimited,
    ProviderResponseInvalid,
    ProviderTimeout,
)
from lab.files import loads_json
from lab.providers.answer import in_band_fault
from lab.providers.base import Exchange, Purpose
from lab.providers.client import client_options, shared_client
from lab.providers.deadline import call_deadline
from lab.providers.decoding import ACCEPT_ENCODING
from lab.providers.faults import (
    ServerError,
    backoff_s,
    error_from_body,
    one_line,
    retried_status,
    retry_after_s,
    status_cause,
)
from lab.providers.transfer import ResponseTooLarge, capped, deadline_guard, drain_after_done, sse_fields
from lab.providers.wire import DONE, parse_exchange, stream_partial

DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # provider.max_response_bytes; no chat answer comes near it
_EXCERPT_CHARS = 300


class _Retryable(Exception):
    """Internal: a transient fault that may be retried (see :mod:`lab.providers.faults`).

    ``label`` names the fault's shape (``HTTP 503``, ``cannot connect``,
    ``error in the stream after HTTP 200``), ``detail`` the server's words.
    """

    def __init__(self, cause: str, status: int | None, retry_after_s: float | None, label: str,
                 detail: str, server: ServerError | None = None,
                 original: BaseException | None = None) -> None:
        super().__init__(f"{label}: {detail}")
        self.cause, self.status, self.retry_after_s = cause, status, retry_after_s
        self.label, self.detail, self.server, self.original = label, detail, server, original
        self.exchange: Exchange | None = None  # the answer that carried the fault, when there was one

    @property
    def reason(self) -> str:
        return f"{self.label}: {self.detail}"


class OpenAICompatProvider:
    """Any OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` (http or https).
        api_key_env: name of the variable in ``env`` holding the API key; it
            is read at every ``send`` and sent as ``Authorization: Bearer``.
        stream: True to ask for SSE (adds ``stream`` and
            ``stream_options.include_usage`` to the body).
        timeout_s: per-call ceiling in seconds (connect, each read, and the
            whole call including retries and streaming).
        max_retries: retries after the first attempt for transient faults (>= 0).
        env: environment to read the key, ``SSL_CERT_FILE``/``SSL_CERT_DIR``
            and ``*_proxy``/``NO_PROXY`` from (``os.environ`` is never read).
        transport: an httpx transport to use instead of the network one.
        sleep: called with the wait in seconds between retries.
        clock: monotonic seconds, for deadlines.
        headers: extra request headers (never ``Authorization``).
        max_response_bytes: the largest decoded answer accepted; a larger
            one is refused (``ResponseTooLarge``) without being kept.

    Raises:
        ConfigError: bad base_url, timeout_s, max_retries, max_response_bytes
            or CA files.
    """

    name = "openai"

    def __init__(self, base_url: str, api_key_env: str, stream: bool, timeout_s: float,
                 max_retries: int, env: Mapping[str, str],
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 headers: Mapping[str, str] | None = None,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise ConfigError(f"provider.base_url: expected an http(s) URL, got {base_url!r}")
        if not api_key_env:
            raise ConfigError("provider.api_key_env: expected the name of an environment variable, got ''")
        if not timeout_s > 0:
            raise ConfigError(f"provider.timeout_s: expected > 0 seconds, got {timeout_s!r}")
        if max_retries < 0:
            raise ConfigError(f"provider.max_retries: expected >= 0, got {max_retries!r}")
        if max_response_bytes < 1:
            raise ConfigError(f"provider.max_response_bytes: expected >= 1, got {max_response_bytes!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key_env = api_key_env
        self.stream = stream
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.max_response_bytes = int(max_response_bytes)
        self.last_retries: list[dict[str, Any]] = []
        # Extra request headers (gateways); recorded in cassettes, so scanned for secrets there.
        self.headers = dict(headers or {})
        if any(name.lower() == "authorization" for name in self.headers):
            raise ConfigError("provider.headers: set the API key through provider.api_key_env, "
                              "not an Authorization header")
        self._env = env
        self._sleep = sleep
        self._clock = clock
        # One pooled client per process and setup (lab.providers.client); an injected
        # transport (tests) gets a client of its own.
        self._client = (shared_client(env, self.url) if transport is None
                        else httpx.Client(**client_options(env, self.url, transport)))

    def send(self, request: dict[str, Any], *, purpose: Purpose = "main",
             timeout_s: float | None = None) -> Exchange:
        """POST ``request`` and return the exchange as received.

        ``purpose`` does not change the call. ``timeout_s`` (the run's
        remaining wall budget) lowers the ceiling when smaller than the
        configured one. The answer is parsed once with ``parse_exchange``
        so an unusable answer fails here, not later.

        Raises:
            ProviderError and subclasses, as in the module docstring.
        """
        self.last_retries = []
        api_key = self._api_key()
        budget_s = self.timeout_s if timeout_s is None else min(self.timeout_s, timeout_s)
        deadline = self._clock() + budget_s
        body = dict(request)
        if self.stream:
            body.update(stream=True, stream_options={"include_usage": True})
        try:
            return self._send_with_retries(body, api_key, deadline)
        except ProviderError as exc:
            if len(api_key) >= 8 and api_key in f"{exc} {exc.server}":
                raise exc.redacted(api_key) from exc
            raise

    def _send_with_retries(self, body: dict[str, Any], api_key: str, deadline: float) -> Exchange:
        attempt = 1
        while True:
            try:
                exchange = self._attempt(body, api_key, deadline)
                try:
                    self._check_in_band(exchange)
                    parse_exchange(exchange)
                except (ProviderError, _Retryable) as exc:
                    exc.exchange = exchange  # the failing answer, so a recording can replay it
                    raise
                return exchange
            except _Retryable as retry:
                delay_s = self._retry_delay(retry, attempt, deadline)
                if delay_s is None:
                    error = self._give_up(retry, attempt)
                    error.exchange = retry.exchange
                    if retry.exchange is not None:  # the text before a mid-stream error is kept
                        error.partial = stream_partial(retry.exchange)
                    raise error from retry.original
                self.last_retries.append({"attempt": attempt, "status": retry.status, "cause": retry.cause,
                                          "reason": retry.reason, "delay_s": delay_s})
                self._sleep(delay_s)
                attempt += 1

    def _attempt(self, body: dict[str, Any], api_key: str, deadline: float) -> Exchange:
        remaining_s = deadline - self._clock()
        if remaining_s <= 0:
            raise ProviderTimeout(f"{self.url}: the wall budget was spent before the call")
        headers = {**self.headers, "Authorization": f"Bearer {api_key}", "Accept-Encoding": ACCEPT_ENCODING}
        if self.stream:
            headers.update({"Accept": "text/event-stream", "Cache-Control": "no-store"})
        client = self._client
        request = client.build_request("POST", self.url, json=body, headers=headers,
                                       timeout=httpx.Timeout(remaining_s))
        with call_deadline(remaining_s):  # status line and headers too: a trickle or 100-Continue loop ends
            response = self._open(client, request, remaining_s)
        try:
            with deadline_guard(response, deadline - self._clock()) as fired, \
                    self._translated(remaining_s, fired):
                exchange = self._read(response, deadline, remaining_s)
            if fired.is_set():  # a body without length ends "cleanly" when the guard shuts it down
                raise ProviderTimeout(f"{self.url}: no complete answer within {remaining_s:.2f} s "
                                      "(the server kept the connection open)")
            return exchange
        finally:
            response.close()  # an unread body closes the connection; a read one returns to the pool

    def _open(self, client: httpx.Client, request: httpx.Request, remaining_s: float) -> httpx.Response:
        """Send the request and wait for the status line; a connection that fails before any
        answer (refused, reset, closed) is a transient fault, retried like a 503.

        A pooled keep-alive connection the server closed just before it was reused ends
        cleanly with not one byte of answer (``RemoteProtocolError``: "Server disconnected
        without sending a response"); the request is sent once more at once, on a new
        connection, before that counts as a fault (an attempt of ``max_retries``). A reset
        or a refused connection is a fault at once.
        """
        with self._translated(remaining_s, threading.Event(), "no status line and headers"):
            try:
                try:
                    return client.send(request, stream=True)
                except httpx.RemoteProtocolError:
                    return client.send(request, stream=True)  # the stale connection left the pool
            except (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as exc:
                detail = f"{type(exc).__name__}: {one_line(str(exc))}".rstrip(": ")
                raise _Retryable("connect", None, None, "cannot connect", detail, original=exc) from exc

    @contextmanager
    def _translated(self, timeout_s: float, fired: threading.Event, missing: str = "no answer") -> Iterator[None]:
        """Map httpx / httpx-sse exceptions to the lab's tree (``from`` the original)."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                f"{self.url}: {missing} within {timeout_s:.2f} s ({type(exc).__name__})") from exc
        except httpx.DecodingError as exc:
            raise ProviderResponseInvalid(f"{self.url}: cannot decode the body: {exc}") from exc
        except httpx.TransportError as exc:
            if fired.is_set():
                raise ProviderTimeout(f"{self.url}: no complete answer within {timeout_s:.2f} s "
                                      "(the server kept the connection open)") from exc
            raise ProviderError(f"{self.url}: connection lost ({type(exc).__name__}: {exc})",
                                cause="connect") from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        except SSEError as exc:
            raise ProviderResponseInvalid(f"{self.url}: {exc}") from exc

    def _read(self, response: httpx.Response, deadline: float, budget_s: float) -> Exchange:
        """The answer, read under the size cap; an error status is checked on its (capped) body."""
        def check() -> None:
            if self._clock() > deadline:
                raise ProviderTimeout(f"{self.url}: no complete answer within {budget_s:.2f} s "
                                      "(the body was still arriving)")

        body = capped(response, self.max_response_bytes, self._too_large, check)
        content_type = body.headers.get("content-type", "").partition(";")[0].strip().lower()
        if not self.stream or not response.is_success or content_type != "text/event-stream":
            body.read()  # some servers ignore "stream" and answer with one JSON body
            return self._json_exchange(body)
        events: list[str] = []
        errors: list[str] = []
        lines = body.iter_lines()
        for name, value in sse_fields(lines):
            if self._clock() > deadline:
                raise ProviderTimeout(
                    f"{self.url}: stream still running at the deadline after {len(events)} events")
            if name == "error":
                errors.append(value)  # llama.cpp's legacy "error: {...}" line
                continue
            if not value:
                continue  # an event without data (e.g. "event: ping") carries nothing
            events.append(value)
            if value.strip() == DONE:
                drain_after_done(lines, response)
                break
        exchange: Exchange = {"type": "sse", "status": response.status_code, "events": events}
        if errors:
            exchange["errors"] = errors
        return exchange

    def _too_large(self, size: int) -> ProviderError:
        return ResponseTooLarge(f"{self.url}: the answer passed provider.max_response_bytes "
                                f"({self.max_response_bytes} bytes; {size} received, not kept)")

    def _json_exchange(self, response: httpx.Response) -> Exchange:
        self._check_status(response)
        content_type = response.headers.get("content-type", "")
        try:
            body = loads_json(response.content)  # nesting too deep to parse is not JSON either
        except ValueError as exc:
            raise ProviderResponseInvalid(
                f"{self.url}: HTTP {response.status_code} ({content_type or 'no content type'}): "
                f"body is not JSON: {_excerpt(response.text)!r}") from exc
        if not isinstance(body, dict):
            raise ProviderResponseInvalid(
                f"{self.url}: HTTP {response.status_code}: "
                f"expected a JSON object, got {_excerpt(response.text)!r}")
        return {"type": "json", "status": response.status_code, "body": body}

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        server = error_from_body(response.text)
        if status in (401, 403):
            raise ProviderAuthError(
                f"{self.url}: HTTP {status}: {server.describe()} (the key in ${self.api_key_env} was refused)",
                status=status, server=server.to_json())
        if retried_status(status):
            raise _Retryable(status_cause(status), status, retry_after_s(response.headers),
                             f"HTTP {status}", server.describe(), server)
        raise ProviderError(f"{self.url}: HTTP {status}: {server.describe()}", cause="bad_request",
                            status=status, server=server.to_json())

    def _check_in_band(self, exchange: Exchange) -> None:
        """An error object inside an HTTP 2xx answer (JSON or mid-stream), classified like a status
        (``lab.providers.answer.in_band_fault``, the reading the gateway uses too)."""
        fault = in_band_fault(exchange)
        if fault is None or fault.server is None:
            return
        if fault.cause == "bad_request":
            raise ProviderError(f"{self.url}: {fault.message}", cause=fault.cause, status=fault.status,
                                server=fault.server.to_json(), partial=stream_partial(exchange))
        raise _Retryable(fault.cause, fault.status, None, fault.shape, fault.detail, fault.server)

    def _retry_delay(self, retry: _Retryable, attempt: int, deadline: float) -> float | None:
        if attempt > self.max_retries:
            return None
        delay_s = backoff_s(attempt, retry.retry_after_s)
        if self._clock() + delay_s >= deadline:
            return None  # waiting would spend the rest of the budget
        return delay_s

    def _give_up(self, retry: _Retryable, attempt: int) -> ProviderError:
        tries = f"{attempt} attempt{'s' if attempt != 1 else ''}"
        message = f"{self.url}: {retry.label} after {tries}: {retry.detail}"
        server = retry.server.to_json() if retry.server else None
        if retry.cause == "rate_limited":
            return ProviderRateLimited(message, status=retry.status, server=server)
        return ProviderError(message, cause=retry.cause, status=retry.status, server=server)

    def _api_key(self) -> str:
        value = self._env.get(self.api_key_env, "")
        if not value.strip():
            raise ProviderAuthError(
                f"environment variable {self.api_key_env} is not set or empty; "
                f"it must hold the API key for {self.url} (provider.api_key_env)")
        return value.strip()


    # an event the stream ended inside was never dispatched: it is dropped, as SSE says


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "…"
