"""The per-run gateway: an OpenAI-compatible HTTP server the lab owns (SPEC G1, G4).

Built on aiohttp's web server, run on its own event loop in a background
thread, started and stopped per run. It listens on ``127.0.0.1`` (port
chosen by the kernel) and/or on a path-based unix socket, which a sandbox
with an unshared network reaches through ``lab/gateway/relay.py``.

Routes (nothing else exists)::

    POST /v1/chat/completions   streamed (SSE, event by event as they arrive) or not
    POST /v1/responses          streamed (events keep their ``event:`` names) or not
    GET  /v1/models             answered locally from ``models``
    anything else               404, WebSocket upgrades included

Every request must carry ``Authorization: Bearer <token>`` (the per-run
token, never the real key), else 401, whatever the path. Its error answers
(status, ``type``, when) are listed in :mod:`lab.gateway.errors`.

Provider faults (``lab.providers.answer``: error statuses, connection
errors, in-band errors after HTTP 200, ``response.failed``, a stream without
its terminal event, an oversize or undecodable answer) are retried as the
built-in provider retries them (:class:`RetryPolicy`), as long as no output
has reached the agent. One that persists is counted in
:attr:`GatewayStats.faults`, answered as above (or, mid-stream, as an error
event ending the stream) and halts the run (``upstream_fault``): the run is
an infrastructure error, not the agent's failure. A provider's refusal of the
request itself (``bad_request``: a 400 or an error object of that kind) is
passed on as it came; the agent may well handle it. Requests the gateway
cannot serve are kept by method, path and status (:attr:`GatewayStats.unserved`).

A call *abandoned* before its usage arrived (the agent hung up mid-stream, or the gateway stopped with
it in flight) counts as a call without usage (``lab.gateway.stream`` says why it does not read on).

A budget exceeded, a replay divergence or a persisting provider fault *halts* the run: :attr:`Gateway.halted`
is set and ``on_halt`` is called once (on the gateway's thread; it must be
quick and must not raise) so the lab can kill the agent's process group —
some agents retry errors forever.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import stat
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, NamedTuple

from aiohttp import web

from lab.errors import CassetteMiss
from lab.files import loads_json
from lab.gateway.bodies import BodyEncodingError, decode_body
from lab.gateway.errors import GatewayError, UpstreamError, error_response
from lab.gateway.exchange import UpstreamReply, body_exchange
from lab.gateway.meter import BudgetName, GatewayBudget, GatewayStats, Meter
from lab.gateway.policy import Halt, HaltReason, RetryPolicy
from lab.gateway.stream import pass_stream
from lab.gateway.upstream import Endpoint, Upstream, UpstreamRequest
from lab.providers.answer import Answer, Fault, read_answer

__all__ = ["Gateway", "GatewayAddress", "Halt", "HaltReason", "RetryPolicy", "new_token"]
from lab.providers.faults import backoff_s
from lab.replay.normalise import Api

ROUTES: dict[str, tuple[Api, Endpoint]] = {
    "/v1/chat/completions": ("chat", "chat/completions"),
    "/v1/responses": ("responses", "responses"),
}
MAX_BODY_BYTES = 64 * 1024 * 1024
START_TIMEOUT_S = 10.0

class GatewayAddress(NamedTuple):
    """Where the gateway listens.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` (give it to agents as the
            OpenAI base URL), or None without TCP.
        socket_path: the unix socket, or None without one.
    """

    base_url: str | None
    socket_path: Path | None


def new_token() -> str:
    """A fresh per-run token (32 random bytes, URL-safe base64)."""
    return secrets.token_urlsafe(32)


class Gateway:
    """One run's gateway.

    Args:
        upstream: where calls go (live, recording or replay).
        token: the per-run token agents must present.
        budget: the run's limits (default: none).
        on_halt: called once when a budget is exceeded or replay diverges.
        tcp: listen on ``127.0.0.1:0``.
        socket_path: also (or only) listen on this unix socket; a stale
            socket file there is replaced. At most 107 bytes (the kernel's limit).
        models: ids listed by ``GET /v1/models``.
        clock: monotonic seconds for the wall budget check (the deadline timer
            itself runs on the event loop's clock).
        retry: how transient upstream faults are retried (default: 2 retries, waiting).

    Raises:
        ValueError: neither TCP nor a socket path.

    Example::

        gw = Gateway(LiveUpstream(url, key), token, GatewayBudget(max_turns=20), on_halt=kill)
        base_url, socket_path = gw.start()
        ...  # run the agent with OPENAI_BASE_URL=base_url, OPENAI_API_KEY=token
        gw.stop(); gw.stats
    """

    def __init__(self, upstream: Upstream, token: str, budget: GatewayBudget | None = None,
                 on_halt: Callable[[Halt], None] | None = None, *, tcp: bool = True,
                 socket_path: Path | None = None, models: Sequence[str] = (),
                 clock: Callable[[], float] = time.monotonic, shutdown_timeout_s: float = 2.0,
                 retry: RetryPolicy | None = None) -> None:
        if not tcp and socket_path is None:
            raise ValueError("gateway: listen on TCP, a unix socket, or both")
        if not token:
            raise ValueError("gateway: the per-run token must not be empty")
        self.upstream = upstream
        self.budget = budget or GatewayBudget()
        self.on_halt = on_halt
        self.tcp = tcp
        self.socket_path = socket_path
        self.models = tuple(models)
        self.retry = retry or RetryPolicy()
        self.internal_errors: list[BaseException] = []
        self.halted = threading.Event()
        self.halt: Halt | None = None
        self.callback_errors: list[BaseException] = []
        self._auth = f"Bearer {token}".encode()
        self._meter = Meter(self.budget, clock)
        self._shutdown_timeout_s = shutdown_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._divergence: CassetteMiss | None = None
        self._serving: set[asyncio.Task[Any]] = set()
        self._next_call = 0
        self.address: GatewayAddress | None = None

    @property
    def stats(self) -> GatewayStats:
        """Calls, reported tokens and the budget state so far."""
        return self._meter.snapshot()

    def start(self) -> GatewayAddress:
        """Listen, start the wall clock, and return where agents reach the gateway.

        Raises:
            GatewayError: already started, or cannot listen (names the address and why).
        """
        if self._loop is not None:
            raise GatewayError("gateway: already started")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=self._run_loop, args=(loop,), name="lab-gateway", daemon=True)
        self._thread.start()
        try:
            self.address = asyncio.run_coroutine_threadsafe(self._listen(), loop).result(START_TIMEOUT_S)
        except (OSError, FutureTimeout) as exc:
            self._close_loop()
            where = f"unix socket {self.socket_path}" if self.socket_path else "127.0.0.1"
            raise GatewayError(f"gateway: cannot listen on {where}: {exc}") from None
        return self.address

    def stop(self) -> None:
        """Stop (idempotent): stop listening, end open connections (a call in flight counts as abandoned)."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._teardown(), loop).result(self._shutdown_timeout_s + 10)
        finally:
            self._close_loop()
            if self.socket_path is not None and _is_socket(self.socket_path):
                self.socket_path.unlink()

    def __enter__(self) -> Gateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- lifecycle (on the gateway's loop) ---------------------------------

    def _run_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.set_exception_handler(self._loop_exception)
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Errors the event loop would print (a connection lost in a callback): kept, not printed."""
        exc = context.get("exception")
        self.internal_errors.append(exc if isinstance(exc, BaseException) else RuntimeError(context.get("message")))

    def _close_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
        self._thread = None

    async def _listen(self) -> GatewayAddress:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        # auto_decompress off: request bodies are decoded by lab.gateway.bodies (zstd and br too).
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=self._shutdown_timeout_s,
                               auto_decompress=False)
        await runner.setup()
        self._runner = runner
        base_url = None
        if self.tcp:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
            base_url = f"http://127.0.0.1:{port}/v1"
        if self.socket_path is not None:
            if _is_socket(self.socket_path):
                self.socket_path.unlink()
            await web.UnixSite(runner, str(self.socket_path)).start()
        self._meter.start()
        if self.budget.max_wall_ms is not None:
            self._deadline = asyncio.get_running_loop().call_later(self.budget.max_wall_ms / 1000, self._expire)
        return GatewayAddress(base_url, self.socket_path)

    async def _teardown(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        for task in self._serving:  # aiohttp cancels those past its timeout but does not wait: each counts its call
            task.cancel()
        if self._serving:
            await asyncio.wait(self._serving, timeout=self._shutdown_timeout_s)
        await self.upstream.aclose()

    def _expire(self) -> None:
        if self._meter.expire():
            self._halt(Halt("maxWallMs", self._meter.snapshot().exceeded_detail or "maxWallMs"))

    def _halt(self, halt: Halt) -> None:
        if self.halted.is_set():
            return
        self.halt = halt
        self.halted.set()
        if self.on_halt is not None:
            try:
                self.on_halt(halt)
            except Exception as exc:  # the owner's bug must not break serving; kept for it to see
                self.callback_errors.append(exc)

    # -- requests ------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        try:
            return await self._serve(request)
        except asyncio.CancelledError:
            raise
        except ConnectionError:  # the agent left: nobody reads an answer; aiohttp drops it quietly
            return web.Response(status=499, reason="Client Closed Request")
        except Exception as exc:  # a bug in the lab: answered and kept, never a traceback on the console
            self.internal_errors.append(exc)
            return error_response(500, "internal_error", f"the lab's gateway failed: {type(exc).__name__}: {exc}")
        finally:
            self._serving.discard(task)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), self._auth):
            return self._unserved(request, 401, "unauthorized",
                                  "missing or wrong token: send Authorization: Bearer <run token>", count=False)
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return self._unserved(request, 404, "not_found", "WebSocket connections are not served; use HTTP",
                                  count=False)
        if request.method == "GET" and request.path == "/v1/models":
            return web.json_response({"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "lab"} for m in self.models]})
        route = ROUTES.get(request.path)
        if request.method != "POST" or route is None:
            return self._unserved(request, 404, "not_found", f"no route {request.method} {request.path} "
                                  f"(served: POST {', '.join(ROUTES)}, GET /v1/models)", count=False)
        return await self._model_call(request, *route)

    async def _model_call(self, request: web.Request, api: Api, endpoint: Endpoint) -> web.StreamResponse:
        raw = await request.read()
        try:
            raw = decode_body(raw, request.headers.get("Content-Encoding"), MAX_BODY_BYTES)
        except BodyEncodingError as exc:
            status = 415 if exc.unsupported else 400
            return self._unserved(request, status, "unsupported_encoding" if exc.unsupported else "invalid_encoding",
                                  str(exc))
        try:
            body = loads_json(raw)
        except (ValueError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            return self._unserved(request, 400, "invalid_request", "the request body must be a JSON object")
        if self._divergence is not None:
            self._meter.refuse()
            return error_response(400, "replay_divergence", str(self._divergence))
        exceeded = self._meter.admit()
        if exceeded is not None:
            return self._budget_error(exceeded)
        call = UpstreamRequest(api, endpoint, body, raw, body.get("stream") is True, self._next_call)
        self._next_call += 1  # no await since admit(): handlers share one thread, so indices are dense
        attempt = 1
        while True:
            try:
                reply = await self.upstream.send(call)
            except asyncio.CancelledError:  # the run ended while the provider worked on the call
                self._meter.abandon()
                raise
            except CassetteMiss as exc:
                self._divergence = exc
                self._halt(Halt("replay_divergence", str(exc), exc))
                return error_response(400, "replay_divergence", str(exc))
            except UpstreamError as exc:
                fault = Fault("connect" if exc.cause == "stream" else exc.cause, "upstream", str(exc))
                wait: float | None = None
            else:
                if reply.events is None:
                    answer = read_answer(api, body_exchange(reply.status, reply.body))
                    if answer.fault is None or answer.fault.cause == "bad_request":
                        return self._answer_body(answer, reply)  # a refusal of the agent's request is its own
                    fault, wait = answer.fault, reply.retry_after_s
                else:
                    outcome = await self._answer_stream(request, api, call.call_index, reply)
                    if isinstance(outcome, web.StreamResponse):
                        return outcome
                    fault, wait = outcome, reply.retry_after_s
            if fault.retried and attempt <= self.retry.max_retries:
                self._meter.retried()
                delay_s = backoff_s(attempt, wait) if self.retry.wait else 0.0
                if delay_s:
                    await asyncio.sleep(delay_s)
                attempt += 1
                continue
            return self._fault_answer(call.call_index, fault, attempt)

    def _unserved(self, request: web.Request, status: int, kind: str, message: str,
                  count: bool = True) -> web.Response:
        """Answer a request the gateway cannot serve; kept by method, path and status for the run's
        record (``count``: also a refused model call)."""
        if count:
            self._meter.refuse()
        self._meter.unserved(f"{request.method} {request.path} ({status} {kind})")
        return error_response(status, kind, message)

    def _fault_answer(self, call_index: int, fault: Fault, attempts: int) -> web.Response:
        """A fault that persisted: counted, the run halted, the agent told in the gateway's error shape."""
        self._meter.fault(call_index, fault, attempts)
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}"
        self._halt(Halt("upstream_fault", f"call {call_index}: {fault.cause}: {fault.message}{tries}", fault=fault))
        status = fault.status if fault.status is not None and fault.status >= 400 else (
            504 if fault.cause == "timeout" else 502)
        kind = "upstream_timeout" if fault.cause == "timeout" else "upstream_error"
        return error_response(status, kind, f"{fault.message}{tries}", code=fault.cause)

    def _budget_error(self, name: BudgetName) -> web.Response:
        detail = self._meter.snapshot().exceeded_detail or name
        self._halt(Halt(name, detail))
        return error_response(400, "budget_exceeded", f"budget_exceeded: {detail}; the run is over")

    def _answer_body(self, answer: Answer, reply: UpstreamReply) -> web.Response:
        if answer.fault is None:
            self._meter.add_answer(answer)
        return web.Response(status=reply.status, body=reply.body, headers={"Content-Type": reply.content_type})

    async def _answer_stream(self, request: web.Request, api: Api, call_index: int,
                             reply: UpstreamReply) -> web.StreamResponse | Fault:
        def failed(fault: Fault) -> None:
            self._meter.fault(call_index, fault, 1)
            self._halt(Halt("upstream_fault", f"call {call_index}: {fault.cause}: {fault.message}", fault=fault))

        return await pass_stream(request, api, reply, self._meter.add_answer, failed, self._meter.abandon)


def _is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(path.lstat().st_mode)
    except FileNotFoundError:
        return False
