"""make_provider: the provider config group to a provider instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.errors import ConfigError, SuiteError
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.registry import make_provider
from lab.providers.scripted import ScriptedProvider
from lab.providers.wire import parse_exchange

OPENAI = {"name": "openai", "model": "gpt-4.1-mini", "base_url": "https://api.openai.com/v1",
          "api_key_env": "OPENAI_API_KEY", "stream": True, "timeout_s": 120.0, "max_retries": 2,
          "reasoning_effort": None}


def write_script(suite_dir: Path, task_id: str, script_task_id: str | None = None) -> Path:
    path = suite_dir / "scripts" / f"{task_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schemaVersion": 1, "taskId": script_task_id or task_id,
                                "turns": [{"content": "DONE"}]}), encoding="utf-8")
    return path


@pytest.mark.parametrize("stream", [False, True])
def test_scripted_loads_the_task_script(stream: bool, tmp_path: Path) -> None:
    write_script(tmp_path, "fix-off-by-one")
    provider = make_provider({"name": "scripted", "model": "scripted", "stream": stream},
                             suite_dir=tmp_path, task_id="fix-off-by-one", env={})
    assert isinstance(provider, ScriptedProvider)
    exchange = provider.send({"model": "scripted", "messages": []})
    assert exchange["type"] == ("sse" if stream else "json")
    assert parse_exchange(exchange).content == "DONE"


def test_missing_script_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=str(tmp_path / "scripts" / "t1.json")):
        make_provider({"name": "scripted"}, suite_dir=tmp_path, task_id="t1", env={})


def test_script_for_another_task_is_refused(tmp_path: Path) -> None:
    path = write_script(tmp_path, "t1", script_task_id="t2")
    with pytest.raises(SuiteError, match=f'{path}: field "taskId": expected \'t1\', got \'t2\''):
        make_provider({"name": "scripted"}, suite_dir=tmp_path, task_id="t1", env={})


def test_task_id_must_be_a_plain_name(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="not a plain name"):
        make_provider({"name": "scripted"}, suite_dir=tmp_path, task_id="../t1", env={})


def test_openai_is_built_from_its_settings(tmp_path: Path) -> None:
    provider = make_provider(OPENAI, suite_dir=tmp_path, task_id="t", env={"OPENAI_API_KEY": "k"})
    assert isinstance(provider, OpenAICompatProvider)
    assert (provider.url, provider.api_key_env, provider.stream, provider.timeout_s, provider.max_retries) == \
        ("https://api.openai.com/v1/chat/completions", "OPENAI_API_KEY", True, 120.0, 2)


@pytest.mark.parametrize("override, message", [
    ({"name": "anthropic"}, "provider.name: expected one of openai, scripted, got 'anthropic'"),
    ({"base_url": None}, "provider.base_url: required"),
    ({"api_key_env": None}, "provider.api_key_env: required"),
    ({"timeout_s": "fast"}, "provider.timeout_s: expected int or float"),
    ({"max_retries": True}, "provider.max_retries: expected int"),
    ({"stream": "yes"}, "provider.stream: expected bool"),
])
def test_bad_settings_name_the_key(override: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message):
        make_provider({**OPENAI, **override}, suite_dir=tmp_path, task_id="t", env={})
