"""Budgets: a call past maxTurns / maxTokens / maxWallMs is refused and the owner is told once."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from lab.gateway import Gateway, GatewayBudget
from tests.helpers.gateway_support import AUTH, Halts, sdk
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]


class FakeClock:
    """Monotonic seconds the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def post(gateway: Gateway, stream: bool = False) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": stream}
    with httpx.Client() as client:
        return client.post(gateway.address.base_url + "/chat/completions", json=body, headers=AUTH)


def test_a_call_past_max_turns_is_refused_and_halts_once(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                         halts: Halts) -> None:
    provider.handler = ScriptedStub([Turn(text="ok")])
    gateway = make_gateway(budget=GatewayBudget(max_turns=2))

    statuses = [post(gateway).status_code for _ in range(4)]

    assert statuses == [200, 200, 400, 400]
    assert len(provider.requests) == 2
    assert [h.reason for h in halts.calls] == ["maxTurns"]
    assert halts.calls[0].detail == "maxTurns: 2 of 2 calls used"
    assert gateway.halted.is_set()
    assert (gateway.stats.calls, gateway.stats.refused, gateway.stats.exceeded) == (2, 2, "maxTurns")


def test_the_refusal_is_a_budget_exceeded_error_the_sdk_does_not_retry(
        make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    import openai  # a second of import: only the tests that name its errors pay for it

    provider.handler = ScriptedStub([Turn(text="ok")])
    gateway = make_gateway(budget=GatewayBudget(max_turns=1))
    with sdk(gateway.address.base_url, max_retries=2) as client:
        client.responses.create(model="m", input="x")

        with pytest.raises(openai.BadRequestError, match="budget_exceeded: maxTurns: 1 of 1 calls used") as info:
            client.responses.create(model="m", input="x")

    assert info.value.code == "budget_exceeded"
    assert gateway.stats.refused == 1


@pytest.mark.parametrize("stream", [True, False])
def test_a_call_once_max_tokens_were_reported_is_refused(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                         halts: Halts, stream: bool) -> None:
    provider.handler = ScriptedStub([Turn(text="ok", usage=(8, 4))])
    gateway = make_gateway(budget=GatewayBudget(max_tokens=20))

    statuses = []
    for _ in range(3):
        response = post(gateway, stream)
        statuses.append(response.status_code)

    assert statuses == [200, 200, 400]
    assert [h.reason for h in halts.calls] == ["maxTokens"]
    assert halts.calls[0].detail == "maxTokens: 24 of 20 tokens used"


def test_max_tokens_is_not_enforced_once_a_call_reported_no_usage(make_gateway: MakeGateway,
                                                                  provider: LocalHTTPServer,
                                                                  halts: Halts) -> None:
    provider.handler = ScriptedStub([Turn(text="ok", usage=None), Turn(text="ok", usage=(50, 50))])
    gateway = make_gateway(budget=GatewayBudget(max_tokens=10))

    statuses = [post(gateway).status_code for _ in range(3)]

    assert statuses == [200, 200, 200]
    assert halts.calls == []


def test_a_call_after_max_wall_ms_is_refused(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                             halts: Halts) -> None:
    provider.handler = ScriptedStub([Turn(text="ok")])
    clock = FakeClock()
    gateway = make_gateway(budget=GatewayBudget(max_wall_ms=3_600_000), clock=clock)
    first = post(gateway).status_code
    clock.now += 3600.0

    second = post(gateway)

    assert (first, second.status_code) == (200, 400)
    assert second.json()["error"]["type"] == "budget_exceeded"
    assert [h.reason for h in halts.calls] == ["maxWallMs"]
    assert halts.calls[0].detail == "maxWallMs: 3600000 of 3600000 ms used"


def test_the_wall_deadline_halts_an_agent_that_never_calls(make_gateway: MakeGateway, halts: Halts) -> None:
    gateway = make_gateway(budget=GatewayBudget(max_wall_ms=1))

    assert halts.event.wait(10)

    assert [h.reason for h in halts.calls] == ["maxWallMs"]
    assert gateway.stats.exceeded == "maxWallMs"
    assert post(gateway).json()["error"]["code"] == "budget_exceeded"


def test_a_raising_callback_does_not_break_serving(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    def broken(halt: object) -> None:
        raise RuntimeError("owner bug")

    gateway = make_gateway(budget=GatewayBudget(max_turns=1))
    gateway.on_halt = broken
    provider.handler = ScriptedStub([Turn(text="ok")])
    post(gateway)

    response = post(gateway)

    assert response.status_code == 400
    assert [str(e) for e in gateway.callback_errors] == ["owner bug"]


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"budget\.maxTurns: expected >= 1, got 0"):
        GatewayBudget(max_turns=0)
