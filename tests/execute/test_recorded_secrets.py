"""A key the model streams back, split across deltas, is redacted in the cassette the same way for the
built-in agent and a command agent (the reference agent); home paths are scrubbed; the recording replays.

A real loopback server (tests/helpers/openai_stub.py) streams the answer in 16-character deltas, so
the key reaches the recorder in three pieces, none of which is a key by itself.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lab.providers.wire import parse_exchange
from tests.execute.test_command_agent_runs import TASK, run_once
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.openai_stub import ScriptedStub, Turn

KEY = "sk-proj-" + "Zq4vR8mT2xK6nB1cW9eY3uH7jL5pA0sDfG8hJ2kQ"
TMP = tempfile.gettempdir()  # the temp dir the scrubber knows (TMPDIR when set)
ANSWER = f"The deploy key is {KEY}; I left it in /home/alice/.env and {TMP}/pytest-of-alice/pytest-4/x."


def cassette(tmp_path: Path, agent: str) -> Path:
    root = tmp_path / "cassettes" / "smoke-coding"
    return root / "agents" / "reference" / f"{TASK}.jsonl" if agent == "reference" else root / f"{TASK}.jsonl"


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["builtin", "reference"])
def test_a_streamed_key_is_redacted_alike_for_both_agents_and_replays(tmp_path: Path, agent: str) -> None:
    argv = ["suite=smoke-coding", f"agent={agent}", f"tasks=[{TASK}]", f"cassette_dir={tmp_path / 'cassettes'}",
            "yes=true", "trust_local=true"]
    with LocalHTTPServer() as server:
        server.handler = ScriptedStub([Turn(text=ANSWER)])
        record = run_once([*argv, "mode=record", "provider=openai", "provider.model=stub-model",
                           f"provider.base_url={server.url}/v1", "provider.api_key_env=LAB_TEST_REAL_KEY"],
                          env={**os.environ, "LAB_TEST_REAL_KEY": "sk-test-unrelated-0123456789abcdef0123"})
    assert record["status"] != "error", record.get("error")
    path = cassette(tmp_path, agent)
    text = path.read_text()
    assert KEY not in text and KEY[8:24] not in text and "alice" not in text
    calls = [json.loads(line) for line in text.splitlines()[1:]]
    answer = parse_exchange(calls[-1]["exchange"]).content
    assert answer == ("The deploy key is <secret:api-key>; I left it in <home>/.env and "
                      "<tmp>/pytest-of-<user>/pytest-4/x.")
    assert {"file": "cassette", "field": f"calls[{calls[-1]['index']}].exchange.events",
            "kind": "sk- API key (OpenAI/Anthropic style)"} in record["redactions"]
    assert KEY not in json.dumps(record)

    replayed: dict[str, Any] = run_once([*argv, "mode=replay", "provider=openai", "provider.model=stub-model"])
    assert replayed["status"] != "error", replayed.get("error")
