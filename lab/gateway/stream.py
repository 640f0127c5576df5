"""Passing a provider's stream on to the agent, read by the lab's wire layer as it passes (``lab.gateway.server``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from lab.gateway.errors import UpstreamError
from lab.gateway.exchange import SseEvent, UpstreamReply, carries_output, is_terminal, sse_exchange, stream_error_event
from lab.providers.answer import Answer, Fault, read_answer
from lab.replay.normalise import Api


async def pass_stream(request: web.Request, api: Api, reply: UpstreamReply, settle: Callable[[Answer], None],
                      failed: Callable[[Fault], None], abandoned: Callable[[], None]) -> web.StreamResponse | Fault:
    """Pass a stream on event by event, read by the lab's wire layer as it passes.

    The events before the first one that carries output are held back: a
    fault there (an error event, ``response.failed``, a stream that ends
    or breaks before any output) is retried like an error status. Past
    that, a fault reaches the agent as a well-formed error event at the
    end of its stream (chat: ``{"error": {...}}``; Responses: an ``error``
    event), and is counted; the answer is settled before its terminal
    event is passed on, so an agent that exits at once leaves nothing
    unsettled.

    A stream left before its terminal event is *abandoned*: the agent hung
    up mid-stream (a write fails), the run ended (the task is cancelled), or
    the replay of such a stream reached the end of its recording. The
    provider reports usage at a stream's end, so the lab never saw this
    call's: the gateway does not read on for it (that would buy the rest of
    an answer the agent declined, from providers that stop generating when
    the connection closes); the caller counts the call as one without usage.

    Args:
        request: the agent's request.
        api: the wire format of the stream.
        reply: the upstream's reply (``events`` set); its events are closed here.
        settle: called with the answer once it is complete and usable.
        failed: called with a fault that arrived after output had reached the agent.
        abandoned: called once for a stream left before it was settled or failed.

    Returns:
        The response sent, or the fault of a stream that failed before any
        output reached the agent (nothing was sent: the caller may retry).

    Raises:
        asyncio.CancelledError: the run ended mid-stream (after ``abandoned``).
    """
    assert reply.events is not None
    seen: list[SseEvent] = []
    held = True
    response: web.StreamResponse | None = None
    fault: Fault | None = None
    settled = False
    try:
        async for event in reply.events:
            seen.append(event)
            terminal = is_terminal(api, event)
            if held and not terminal and not carries_output(api, event):
                continue
            if terminal or held:
                answer = read_answer(api, sse_exchange(reply.status, seen, complete=terminal))
                found = answer.fault
                if found is not None and found.cause != "bad_request" and (
                        terminal or found.cause != "incomplete_response"):  # not over yet: not incomplete
                    if held:
                        return found  # nothing has reached the agent: may be retried
                    fault = found
                    break
                if terminal:
                    settle(answer)  # settled before the agent can see the end
                    settled = True
            if response is None:
                response = await _start_stream(request, reply)
            for pending in (seen if held else [event]):
                await response.write(pending.encode())
            held = False
            if terminal:
                break
        else:
            if reply.abandoned:  # the recording ends where the agent left when it was made
                abandoned()
                settled = True
            else:
                answer = read_answer(api, sse_exchange(reply.status, seen, complete=False))
                fault = answer.fault
                if fault is None:
                    settle(answer)
                    settled = True
                elif held:
                    return fault
    except UpstreamError as exc:
        fault = Fault("connect" if exc.cause == "stream" else exc.cause, "upstream", str(exc))
        if held:
            return fault
    except ConnectionError:
        if not settled:
            abandoned()
        return response or web.StreamResponse()  # the agent left; nothing to answer
    except asyncio.CancelledError:
        if not settled:
            abandoned()
        raise
    finally:
        await reply.events.aclose()
    if fault is not None:
        failed(fault)  # counted before anything is written: the agent may leave meanwhile
    try:
        if response is None:
            response = await _start_stream(request, reply)
        if fault is not None:
            await response.write(stream_error_event(api, fault).encode())
        await response.write_eof()
    except ConnectionError:
        pass  # the agent left as the stream ended (aiohttp: "Cannot write to closing transport")
    return response or web.StreamResponse()


async def _start_stream(request: web.Request, reply: UpstreamReply) -> web.StreamResponse:
    response = web.StreamResponse(status=reply.status, headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    return response
