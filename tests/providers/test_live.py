"""One real call to an OpenAI-compatible endpoint (paid; opt-in).

Runs with ``pytest --run-live`` (the root conftest then sets LAB_RUN_LIVE=1
and keeps OPENAI_API_KEY) and skips without OPENAI_API_KEY. Optional:
OPENAI_BASE_URL (default https://api.openai.com/v1) and OPENAI_MODEL
(default gpt-4.1-mini); not LAB_* names, which the autouse fixture clears.
The environment is read inside the test, after that fixture ran.
"""

from __future__ import annotations

import json
import os

import pytest

from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.wire import parse_exchange

pytestmark = pytest.mark.live

TOOL = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"], "additionalProperties": False}}}


@pytest.mark.parametrize("stream", [True, False])
def test_live_tool_call_round_trip(stream: bool) -> None:
    if os.environ.get("LAB_RUN_LIVE") != "1" or not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("live provider test: pass --run-live (or LAB_RUN_LIVE=1) with OPENAI_API_KEY set")
    env = {"OPENAI_API_KEY": os.environ["OPENAI_API_KEY"]}
    provider = OpenAICompatProvider(
        base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key_env="OPENAI_API_KEY", stream=stream, timeout_s=60.0, max_retries=2, env=env)
    request = {"model": os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"), "max_tokens": 100,
               "messages": [{"role": "user", "content": "Call read_file on calc.py. Do nothing else."}],
               "tools": [TOOL]}
    completion = parse_exchange(provider.send(request))
    assert completion.complete
    assert [c.name for c in completion.tool_calls] == ["read_file"]
    assert json.loads(completion.tool_calls[0].arguments) == {"path": "calc.py"}
    assert completion.usage is not None and completion.usage.input_tokens
