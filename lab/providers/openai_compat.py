"""OpenAI-compatible chat-completions provider over httpx, streaming via httpx-sse.

Every failure leaves as a ``lab.errors.ProviderError`` raised ``from`` the
httpx exception (no httpx exception escapes):

```
httpx.TimeoutException, wall budget spent     ProviderTimeout
httpx.ConnectError (refused, DNS)             ProviderError(cause="connect")
httpx.ReadError / RemoteProtocolError (reset,
  closed mid-body) and other TransportErrors  ProviderError(cause="connect")
HTTP 401 / 403                                ProviderAuthError
HTTP 429, retries exhausted                   ProviderRateLimited
HTTP 5xx, retries exhausted                   ProviderError(cause="server")
other HTTP status (400, 404, 3xx …)           ProviderError(cause="bad_request")
body or stream that is not a chat completion  ProviderResponseInvalid
{"error": …} inside an HTTP 200 answer        ProviderError(cause="server")
```

Retries: only 429 and 5xx are retried, at most ``max_retries`` times, after
``Retry-After``/``retry-after-ms`` (capped at 30 s) or else a deterministic
exponential backoff (0.5 s, 1 s, 2 s … capped at 8 s). A retry whose wait
would pass the call's deadline is not made. Each retry is recorded in
``last_retries`` (reset at the start of every ``send``) as
``{"attempt": int, "status": int, "cause": str, "delay_s": float}``;
the exchange itself stays exactly what the server sent. Connection errors
and timeouts are not retried: a timeout has already spent the run's budget.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
from httpx_sse import SSEError, connect_sse

from lab.errors import (
    ConfigError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimited,
    ProviderResponseInvalid,
    ProviderTimeout,
)
from lab.providers.base import Exchange, Purpose
from lab.providers.wire import DONE, parse_exchange

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
RETRY_AFTER_CAP_S = 30.0
_EXCERPT_CHARS = 300
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}


class _RetryableStatus(Exception):
    """Internal: an HTTP 429 or 5xx answer that may be retried."""

    def __init__(self, status: int, retry_after_s: float | None, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.retry_after_s = retry_after_s
        self.detail = detail


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
        max_retries: retries after the first attempt for 429 / 5xx (>= 0).
        env: environment to read the key, ``SSL_CERT_FILE``/``SSL_CERT_DIR``
            and ``*_proxy``/``NO_PROXY`` from (``os.environ`` is never read).
        transport: an httpx transport to use instead of the network one.
        sleep: called with the wait in seconds between retries.
        clock: monotonic seconds, for deadlines.

    Raises:
        ConfigError: bad base_url, timeout_s, max_retries or CA files.
    """

    name = "openai"

    def __init__(self, base_url: str, api_key_env: str, stream: bool, timeout_s: float,
                 max_retries: int, env: Mapping[str, str],
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 headers: Mapping[str, str] | None = None) -> None:
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise ConfigError(f"provider.base_url: expected an http(s) URL, got {base_url!r}")
        if not api_key_env:
            raise ConfigError("provider.api_key_env: expected the name of an environment variable, got ''")
        if not timeout_s > 0:
            raise ConfigError(f"provider.timeout_s: expected > 0 seconds, got {timeout_s!r}")
        if max_retries < 0:
            raise ConfigError(f"provider.max_retries: expected >= 0, got {max_retries!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key_env = api_key_env
        self.stream = stream
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.last_retries: list[dict[str, Any]] = []
        # Extra request headers (gateways); recorded in cassettes, so scanned for secrets there.
        self.headers = dict(headers or {})
        if any(name.lower() == "authorization" for name in self.headers):
            raise ConfigError("provider.headers: set the API key through provider.api_key_env, "
                              "not an Authorization header")
        self._env = env
        self._sleep = sleep
        self._clock = clock
        self._client_options = _client_options(env, self.url, transport)

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
            if len(api_key) >= 8 and api_key in str(exc):
                raise type(exc)(str(exc).replace(api_key, "<redacted>"), cause=exc.cause) from exc
            raise

    def _send_with_retries(self, body: dict[str, Any], api_key: str, deadline: float) -> Exchange:
        attempt = 1
        while True:
            try:
                exchange = self._attempt(body, api_key, deadline)
                try:
                    parse_exchange(exchange)
                except ProviderError as exc:
                    exc.exchange = exchange  # the failing answer, so a recording can replay it
                    raise
                return exchange
            except _RetryableStatus as retry:
                delay_s = self._retry_delay(retry, attempt, deadline)
                if delay_s is None:
                    raise self._give_up(retry, attempt) from None
                cause = "rate_limited" if retry.status == 429 else "server"
                self.last_retries.append(
                    {"attempt": attempt, "status": retry.status, "cause": cause, "delay_s": delay_s})
                self._sleep(delay_s)
                attempt += 1

    def _attempt(self, body: dict[str, Any], api_key: str, deadline: float) -> Exchange:
        remaining_s = deadline - self._clock()
        if remaining_s <= 0:
            raise ProviderTimeout(f"{self.url}: the wall budget was spent before the call")
        headers = {**self.headers, "Authorization": f"Bearer {api_key}"}
        with self._translated(remaining_s):
            with httpx.Client(timeout=httpx.Timeout(remaining_s), **self._client_options) as client:
                if self.stream:
                    return self._stream(client, body, headers, deadline)
                return self._json_exchange(client.post(self.url, json=body, headers=headers))

    @contextmanager
    def _translated(self, timeout_s: float) -> Iterator[None]:
        """Map httpx / httpx-sse exceptions to the lab's tree (``from`` the original)."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                f"{self.url}: no answer within {timeout_s:.2f} s ({type(exc).__name__})") from exc
        except httpx.ConnectError as exc:
            raise ProviderError(f"{self.url}: cannot connect: {exc}", cause="connect") from exc
        except httpx.DecodingError as exc:
            raise ProviderResponseInvalid(f"{self.url}: cannot decode the body: {exc}") from exc
        except httpx.TransportError as exc:
            raise ProviderError(f"{self.url}: connection lost ({type(exc).__name__}: {exc})",
                                cause="connect") from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        except SSEError as exc:
            raise ProviderResponseInvalid(f"{self.url}: {exc}") from exc

    def _stream(self, client: httpx.Client, body: dict[str, Any], headers: dict[str, str],
                deadline: float) -> Exchange:
        with connect_sse(client, "POST", self.url, json=body, headers=headers) as source:
            response = source.response
            content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if not response.is_success or content_type != "text/event-stream":
                response.read()
                # Some servers ignore "stream" and answer with one JSON body.
                return self._json_exchange(response)
            events: list[str] = []
            errors: list[str] = []
            for name, value in _sse_fields(response.iter_lines()):
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
                    break
            exchange: Exchange = {"type": "sse", "status": response.status_code, "events": events}
            if errors:
                exchange["errors"] = errors
            return exchange

    def _json_exchange(self, response: httpx.Response) -> Exchange:
        self._check_status(response)
        content_type = response.headers.get("content-type", "")
        try:
            body = response.json()
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
        detail = _error_detail(response)
        if status in (401, 403):
            raise ProviderAuthError(
                f"{self.url}: HTTP {status}: {detail} (the key in ${self.api_key_env} was refused)")
        if status == 429 or status >= 500:
            raise _RetryableStatus(status, _retry_after_s(response.headers), detail)
        raise ProviderError(f"{self.url}: HTTP {status}: {detail}", cause="bad_request")

    def _retry_delay(self, retry: _RetryableStatus, attempt: int, deadline: float) -> float | None:
        if attempt > self.max_retries:
            return None
        if retry.retry_after_s is not None:
            delay_s = min(retry.retry_after_s, RETRY_AFTER_CAP_S)
        else:
            delay_s = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1))
        if self._clock() + delay_s >= deadline:
            return None  # waiting would spend the rest of the budget
        return delay_s

    def _give_up(self, retry: _RetryableStatus, attempt: int) -> ProviderError:
        tries = f"{attempt} attempt{'s' if attempt != 1 else ''}"
        message = f"{self.url}: HTTP {retry.status} after {tries}: {retry.detail}"
        if retry.status == 429:
            return ProviderRateLimited(message)
        return ProviderError(message, cause="server")

    def _api_key(self) -> str:
        value = self._env.get(self.api_key_env, "")
        if not value.strip():
            raise ProviderAuthError(
                f"environment variable {self.api_key_env} is not set or empty; "
                f"it must hold the API key for {self.url} (provider.api_key_env)")
        return value.strip()


def _client_options(env: Mapping[str, str], url: str,
                    transport: httpx.BaseTransport | None) -> dict[str, Any]:
    """httpx.Client keyword arguments taken from the injected ``env`` only."""
    options: dict[str, Any] = {"trust_env": False, "follow_redirects": False}
    if transport is not None:
        options["transport"] = transport
        return options
    cafile, cadir = env.get("SSL_CERT_FILE") or None, env.get("SSL_CERT_DIR") or None
    if cafile or cadir:
        try:
            options["verify"] = ssl.create_default_context(cafile=cafile, capath=cadir)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"SSL_CERT_FILE={cafile!r} / SSL_CERT_DIR={cadir!r}: cannot load CA certificates: {exc}"
            ) from exc
    proxy = _proxy_for(env, url)
    if proxy:
        options["proxy"] = proxy
    return options


def _proxy_for(env: Mapping[str, str], url: str) -> str | None:
    """The proxy for ``url`` per the usual ``*_proxy`` / ``NO_PROXY`` variables."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host in _LOOPBACK_HOSTS:
        return None
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    entries = [e.strip().lower() for e in no_proxy.split(",") if e.strip()]
    if "*" in entries:
        return None
    for entry in (e.lstrip("*").lstrip(".") for e in entries):
        if host == entry or host.endswith("." + entry):
            return None
    for key in (f"{parts.scheme}_proxy", "all_proxy"):
        value = env.get(key) or env.get(key.upper())
        if value:
            return value
    return None


def _sse_fields(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``("data", joined data)`` per SSE event and ``("error", value)`` per ``error:`` line.

    Follows the SSE event-stream rules (https://html.spec.whatwg.org/multipage/server-sent-events.html):
    ``data`` lines of one event join with ``\\n``, a blank line ends the event,
    comments and ``event`` / ``id`` / ``retry`` fields carry no data, an event
    cut off by the end of the stream is dropped. ``error``
    is no SSE field; some servers (llama.cpp) report failures on such a line,
    which an SSE client would drop silently.
    """
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "data", "\n".join(data)
            data = []
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "error":
            yield "error", value
    # an event the stream ended inside was never dispatched: it is dropped, as SSE says


def _retry_after_s(headers: httpx.Headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (delta-seconds form only)."""
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


def _error_detail(response: httpx.Response) -> str:
    """The server's error message (OpenAI ``{"error": {"message"}}``) or a body excerpt."""
    try:
        body = response.json()
    except ValueError:
        return repr(_excerpt(response.text)) if response.text else "(empty body)"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return _excerpt(str(body["error"].get("message") or body["error"]))
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return _excerpt(body["error"])
    return _excerpt(response.text)


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "…"
