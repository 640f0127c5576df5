"""Provider retries (429 then 200) are recorded in the run's event log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import of_type, run

from lab.providers.openai_compat import OpenAICompatProvider
from tests.helpers.http_server import LocalHTTPServer, Request, Response

ANSWER = {"id": "r", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "DONE: nothing to do"}}],
          "usage": {"prompt_tokens": 5, "completion_tokens": 3}}


@pytest.fixture
def server() -> Iterator[LocalHTTPServer]:
    with LocalHTTPServer() as srv:
        yield srv


def provider(server: LocalHTTPServer, max_retries: int) -> OpenAICompatProvider:
    return OpenAICompatProvider(base_url=server.url + "/v1", api_key_env="K", stream=False, timeout_s=5,
                                max_retries=max_retries, env={"K": "test-key-value"}, sleep=lambda s: None)


def test_a_retried_call_records_its_retries(workspace: Path, server: LocalHTTPServer) -> None:
    answers = iter([429, 200])

    def handler(request: Request, response: Response) -> None:
        status = next(answers)
        if status == 429:
            response.send_json(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"})
        else:
            response.send_json(200, ANSWER)

    server.handler = handler
    result = run(workspace, provider(server, max_retries=2))
    assert result.stop_reason == "answered"
    [model_call] = of_type(result, "model_call")
    assert [(r["attempt"], r["status"], r["cause"]) for r in model_call["retries"]] == [(1, 429, "rate_limited")]


def test_retries_that_run_out_are_in_the_error(workspace: Path, server: LocalHTTPServer) -> None:
    server.handler = lambda request, response: response.send_json(500, {"error": {"message": "boom"}})
    result = run(workspace, provider(server, max_retries=2))
    assert result.stop_reason == "error" and result.error is not None
    assert result.error["cause"] == "server"
    assert [r["status"] for r in result.error["retries"]] == [500, 500]
    assert len(server.requests) == 3
