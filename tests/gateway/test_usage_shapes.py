"""Usage shapes as a family: wherever a provider puts its usage (top level, Groq's ``x_groq``, Moonshot's
``choices[0]``, split over chunks whose later one lacks the details), the built-in provider's reading and
the gateway's agree, and zeros on a call with a prompt and output are "not reported", never $0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.agents.builtin.budget import UsageTally
from lab.execute.gateway_verdict import gateway_incidents
from lab.gateway import Gateway, LiveUpstream, RetryPolicy
from lab.providers.wire import parse_exchange
from tests.helpers.gateway_support import AUTH, REAL_KEY, TOKEN
from tests.helpers.http_server import LocalHTTPServer, Request, Response

CLIENT = httpx.Client(verify=False, timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client() -> Iterator[None]:
    """The module's client is closed with its connections once the module's tests are done."""
    yield
    CLIENT.close()
PLACES = ("top", "x_groq", "choice0", "split")


def usage_object(prompt: int, completion: int, cached: int | None, place: str) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if cached is not None:
        if place == "choice0":
            usage["cached_tokens"] = cached  # Moonshot: at the usage object's top level
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def stream_events(text: str, usage: dict[str, Any], place: str) -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return json.dumps({"id": "c", "object": "chat.completion.chunk", "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

    events = [chunk({"role": "assistant", "content": text})]
    if place == "top":
        events += [chunk({}, "stop"), json.dumps({"id": "c", "choices": [], "usage": usage})]
    elif place == "x_groq":
        events.append(chunk({}, "stop", x_groq={"id": "req_1", "usage": {**usage, "queue_time": 0.01}}))
    elif place == "choice0":
        last = json.loads(chunk({}, "stop"))
        last["choices"][0]["usage"] = usage
        events.append(json.dumps(last))
    else:  # split: the details first, then a later usage chunk without them
        bare = {k: v for k, v in usage.items() if k != "prompt_tokens_details"}
        events += [chunk({}, "stop", usage=usage), json.dumps({"id": "c", "choices": [], "usage": bare})]
    return [*events, "[DONE]"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(place=st.sampled_from(PLACES), prompt=st.sampled_from([0, 1, 45, 1336, 2048]),
       completion=st.sampled_from([0, 2, 31]), cached_share=st.sampled_from([None, 0.0, 0.5, 1.0]),
       text=st.sampled_from(["", "ok"]))
def test_both_paths_read_every_usage_placement_alike(place: str, prompt: int, completion: int,
                                                     cached_share: float | None, text: str,
                                                     provider_server: LocalHTTPServer) -> None:
    cached = None if cached_share is None else int(prompt * cached_share)
    events = stream_events(text, usage_object(prompt, completion, cached, place), place)
    exchange = {"type": "sse", "status": 200, "events": events}
    done = parse_exchange(exchange)  # what the built-in provider returns is read by this parse

    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        for data in events:
            response.write(f"data: {data}\n\n".encode())
        response.end()

    provider_server.reset()
    provider_server.handler = handler
    upstream = LiveUpstream(provider_server.url + "/v1", REAL_KEY, transport=httpx.AsyncHTTPTransport(verify=False))
    with Gateway(upstream, TOKEN, retry=RetryPolicy(max_retries=0)) as gateway:
        CLIENT.post(gateway.address.base_url + "/chat/completions", headers=AUTH, json={"model": "m", "stream": True})
        stats = gateway.stats
    provider_server.reset()

    zero = prompt == 0 or (completion == 0 and bool(text))
    expected = None if zero else (prompt, completion, cached)
    builtin = done.usage and (done.usage.input_tokens, done.usage.output_tokens, done.usage.cached_input_tokens)
    through = stats.usage and (stats.usage.input_tokens, stats.usage.output_tokens, stats.usage.cached_input_tokens)
    assert builtin == through == expected
    assert done.zero_usage is zero and stats.zero_usage_calls == int(zero)
    tally = UsageTally()
    tally.add(done.usage)
    assert (tally.cached_reported > 0) == (stats.cached_calls > 0)
    if zero:  # not reported, with an incident, never a cost of $0
        [incident] = [i for i in gateway_incidents(stats) if i["kind"] == "usage_unreported"]
        assert "reported 0 tokens" in incident["detail"] and "never $0" in incident["detail"]
