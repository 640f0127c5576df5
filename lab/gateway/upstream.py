"""Where the gateway's calls go: a live provider, a recorder around it, or a cassette.

``Upstream`` is the seam (a Protocol): the gateway hands it one call and
passes its :class:`~lab.gateway.exchange.UpstreamReply` to the agent.

* :class:`LiveUpstream` forwards the agent's body verbatim to a real base URL
  with httpx, adding the real key on the way out only (the agent never sees
  it; any echo of it in an answer becomes ``<redacted>``). Streams pass
  through event by event as they arrive.
* :class:`RecordingUpstream` wraps another upstream and hands the observer
  each call once its answer is complete: the normalised request and the
  exchange (raw events or body, status). Headers are never recorded.
* :class:`ReplayUpstream` answers from a :class:`~lab.replay.matching.Matcher`
  and never touches the network; a request it cannot match raises
  :class:`~lab.replay.matching.ReplayDivergence`.

Errors: :class:`~lab.gateway.errors.UpstreamError` for a provider that
cannot be reached or times out; HTTP errors of a reachable provider are
answers, passed through.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import httpx
from httpx_sse import EventSource, SSEError

from lab.gateway.errors import UpstreamError
from lab.gateway.exchange import SseEvent, UpstreamReply, body_exchange, is_terminal, reply_from_exchange, sse_exchange
from lab.providers.base import Exchange
from lab.providers.deadline import call_deadline, guard_async_transport
from lab.providers.decoding import ACCEPT_ENCODING
from lab.providers.faults import retry_after_s
from lab.providers.openai_compat import DEFAULT_MAX_RESPONSE_BYTES
from lab.providers.transfer import acapped
from lab.replay.matching import Matcher
from lab.replay.normalise import Api, RequestNormaliser, fingerprint

Endpoint = Literal["chat/completions", "responses"]
REDACTED = "<redacted>"


@dataclass(frozen=True)
class UpstreamRequest:
    """One model call as the agent made it.

    Attributes:
        api: ``chat`` or ``responses``.
        endpoint: the path below ``/v1``.
        body: the parsed JSON body.
        raw: the body bytes exactly as received (forwarded verbatim).
        stream: the body asked for a stream (``"stream": true``).
        call_index: 0-based number of this call in the run (admitted calls).
    """

    api: Api
    endpoint: Endpoint
    body: dict[str, Any]
    raw: bytes
    stream: bool
    call_index: int


class Upstream(Protocol):
    """Answers the gateway's calls. Used from the gateway's event loop only."""

    async def send(self, request: UpstreamRequest) -> UpstreamReply:
        """Answer one call.

        Raises:
            UpstreamError: the provider cannot be reached or timed out.
            ReplayDivergence: replay has no recording for this request.
        """
        ...

    async def aclose(self) -> None:
        """Release connections (called once when the gateway stops)."""
        ...


@dataclass
class LiveUpstream:
    """Forwards to a real OpenAI-compatible provider.

    Args:
        base_url: the provider's base URL including ``/v1``
            (``https://api.openai.com/v1``).
        api_key: the real key; sent as ``Authorization: Bearer``; never logged,
            never in ``repr``, scrubbed from answers.
        timeout_s: connect and read timeout per call, in seconds (read: between
            two chunks of a stream).
        extra_headers: headers every call carries (e.g. an organisation id).
        proxy: an HTTP proxy URL, or None (the environment is never consulted).
        transport: an httpx transport for tests, or None.
        max_response_bytes: the largest answer accepted (a body, or a stream's
            data); a larger one is an ``UpstreamError`` of cause
            ``response_too_large``, its bytes not kept.
    """

    base_url: str
    api_key: str = field(repr=False)
    timeout_s: float = 600.0
    extra_headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    proxy: str | None = None
    transport: httpx.AsyncBaseTransport | None = None
    model: str | None = None
    overridden: dict[str, int] = field(default_factory=dict)
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    async def send(self, request: UpstreamRequest) -> UpstreamReply:
        """Forward one call (see :class:`Upstream`).

        With ``model`` set, every call goes out for that model: the run
        measures the configured model, whatever the agent asked for. A call
        that asked for another is counted in ``overridden`` (asked name →
        calls), so the run can say so; the agent never picks what the real key
        pays for.
        """
        client = self._get_client()
        content = request.raw
        asked = request.body.get("model") if isinstance(request.body, dict) else None
        if self.model is not None and asked != self.model:
            self.overridden[str(asked)] = self.overridden.get(str(asked), 0) + 1
            content = json.dumps({**request.body, "model": self.model}, ensure_ascii=False).encode("utf-8")
        headers = {**self.extra_headers, "Content-Type": "application/json",
                   "Accept": "text/event-stream" if request.stream else "application/json",
                   "Accept-Encoding": ACCEPT_ENCODING}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url.rstrip('/')}/{request.endpoint}"
        outgoing = client.build_request("POST", url, content=content, headers=headers)
        try:
            # The status line and headers arrive within timeout_s in all (lab.providers.deadline):
            # a provider trickling its headers or repeating "100 Continue" cannot hold the call.
            with call_deadline(self.timeout_s):
                try:
                    response = await client.send(outgoing, stream=True)
                except httpx.RemoteProtocolError:
                    # A pooled keep-alive connection the provider closed while the agent worked (say,
                    # a long tool command) ends with not one byte of answer: sent once more at once,
                    # on a new connection, as the lab's own provider client does.
                    response = await client.send(outgoing, stream=True)
        except httpx.TimeoutException:
            raise UpstreamError(f"upstream {self._where()}: no status line and headers within {self.timeout_s} s",
                                cause="timeout") from None
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream {self._where()}: {type(exc).__name__}: {self._scrub(str(exc))}",
                                cause="connect") from None
        content_type = response.headers.get("content-type", "application/json")
        wait = retry_after_s(response.headers)
        try:
            # The same cap and bounded decoding as the built-in provider (lab.providers.transfer):
            # an oversized answer or a compression bomb stops at max_response_bytes, never kept whole.
            decoded = acapped(response, self.max_response_bytes,
                              lambda size: UpstreamError(self._too_large(size), cause="response_too_large"))
        except httpx.DecodingError as exc:
            await response.aclose()
            raise UpstreamError(f"upstream {self._where()}: cannot decode the body: {exc}",
                                cause="invalid_response") from None
        if response.is_success and content_type.partition(";")[0].strip() == "text/event-stream":
            return UpstreamReply(response.status_code, "text/event-stream", events=self._events(response, decoded),
                                 retry_after_s=wait)
        try:
            body = b"".join([chunk async for chunk in decoded.aiter_bytes()])
        except httpx.DecodingError as exc:
            raise UpstreamError(f"upstream {self._where()}: cannot decode the body: {exc}",
                                cause="invalid_response") from None
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream {self._where()}: body broke off: {type(exc).__name__}",
                                cause="stream") from None
        finally:
            await response.aclose()
        return UpstreamReply(response.status_code, content_type, body=self._scrub_bytes(body), retry_after_s=wait)

    def _too_large(self, size: int) -> str:
        return (f"upstream {self._where()}: the answer passed provider.max_response_bytes "
                f"({self.max_response_bytes} bytes; {size} received, not kept)")

    async def _events(self, response: httpx.Response, decoded: httpx.Response) -> AsyncGenerator[SseEvent, None]:
        source = EventSource(decoded).aiter_sse()
        size = 0
        try:
            async for sse in source:
                size += len(sse.data)
                if size > self.max_response_bytes:
                    raise UpstreamError(self._too_large(size), cause="response_too_large")
                name = sse.event if sse.event and sse.event != "message" else None
                yield SseEvent(self._scrub(sse.data), name)
        except httpx.DecodingError as exc:
            raise UpstreamError(f"upstream {self._where()}: cannot decode the stream: {exc}",
                                cause="invalid_response") from None
        except (httpx.HTTPError, SSEError) as exc:
            raise UpstreamError(f"upstream {self._where()}: stream broke off: {type(exc).__name__}",
                                cause="stream") from None
        finally:
            await source.aclose()
            await response.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            # TCP_NODELAY: httpcore writes headers and body separately; with Nagle's algorithm the
            # body waits for the server's delayed ACK (~40 ms per call on Linux loopback).
            transport = self.transport or guard_async_transport(httpx.AsyncHTTPTransport(
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]))
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), trust_env=False,
                                             proxy=self.proxy, transport=transport, follow_redirects=False)
        return self._client

    def _where(self) -> str:
        return httpx.URL(self.base_url).copy_with(query=None, fragment=None).host or self.base_url

    def _scrub(self, text: str) -> str:
        return text.replace(self.api_key, REDACTED) if self.api_key else text

    def _scrub_bytes(self, body: bytes) -> bytes:
        return body.replace(self.api_key.encode(), REDACTED.encode()) if self.api_key else body


@dataclass(frozen=True)
class RecordedCall:
    """One complete call, as the record observer receives it.

    Attributes:
        index: the call's number in the run (0-based, in arrival order).
        api: ``chat`` or ``responses``.
        request: the normalised request body (never headers).
        fingerprint: sha256 of the canonical normalised request.
        exchange: the answer as it came (see :mod:`lab.gateway.exchange`).
    """

    index: int
    api: Api
    request: dict[str, Any]
    fingerprint: str
    exchange: Exchange


@dataclass
class RecordingUpstream:
    """Forwards to ``inner`` and reports every complete call to ``observer``.

    The observer runs on the gateway's event loop: keep it quick (append to
    a list). A stream the gateway stopped reading before it ended (the agent
    hung up, or the run ended) is reported with ``"abandoned": true``, so its
    replay ends there as it did, not in a fault; one the provider cut short
    with ``"complete": false`` alone.
    """

    inner: Upstream
    normalise: RequestNormaliser
    observer: Callable[[RecordedCall], None]
    _sent: int = field(default=0, init=False, repr=False)

    async def send(self, request: UpstreamRequest) -> UpstreamReply:
        """Forward and record (see :class:`Upstream`). Every attempt is a recording of its own,
        numbered in the order sent (a call the gateway retried is recorded once per attempt)."""
        request = dataclasses.replace(request, call_index=self._sent)
        self._sent += 1
        reply = await self.inner.send(request)
        normalised = self.normalise(request.api, request.body)
        if reply.events is None:
            self._report(request, normalised, body_exchange(reply.status, reply.body))
            return reply
        return dataclasses.replace(reply, events=self._tee(request, normalised, reply.status, reply.events))

    async def _tee(self, request: UpstreamRequest, normalised: dict[str, Any], status: int,
                   events: AsyncGenerator[SseEvent, None]) -> AsyncGenerator[SseEvent, None]:
        seen: list[SseEvent] = []
        reported = complete = abandoned = False
        try:
            async for event in events:
                seen.append(event)
                if is_terminal(request.api, event):
                    # Reported before the agent sees the end, so it is there once the agent exits.
                    self._report(request, normalised, sse_exchange(status, seen))
                    reported = True
                try:
                    yield event
                except GeneratorExit:  # the gateway stopped reading (the agent hung up)
                    abandoned = True
                    raise
            complete = True
        except asyncio.CancelledError:  # the run ended while the provider was still sending
            abandoned = True
            raise
        finally:
            await events.aclose()
            if not reported:
                self._report(request, normalised, sse_exchange(status, seen, complete=complete,
                                                               abandoned=abandoned))

    def _report(self, request: UpstreamRequest, normalised: dict[str, Any], exchange: Exchange) -> None:
        self.observer(RecordedCall(request.call_index, request.api, normalised, fingerprint(normalised),
                                   exchange))

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()


@dataclass
class ReplayUpstream:
    """Answers from recordings by content; never touches the network.

    Args:
        matcher: the task's recordings.
        normalise: the same normalisation the recording used.
    """

    matcher: Matcher
    normalise: RequestNormaliser

    async def send(self, request: UpstreamRequest) -> UpstreamReply:
        """The recorded answer (see :class:`Upstream`).

        Raises:
            ReplayDivergence: no unused recording matches the normalised request.
        """
        recording = self.matcher.take(request.api, self.normalise(request.api, request.body))
        return reply_from_exchange(recording.exchange)

    async def aclose(self) -> None:
        """Nothing to release."""
