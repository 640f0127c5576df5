"""Config values the lab would misread or echo whole: ``keep=2`` ran as ``keep=true``; a
100,000-character ``provider.model`` became 100 KB console lines. A boolean key takes true/false
(yes/no/1/0) only, and every config error line is bounded, quoting long values as excerpts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.config.compose import LINE_CHARS, boolean_problems, bounded_lines, compose_config, config_problems
from lab.config.schema import boolean_keys
from lab.errors import ConfigError

BASE = {"suite": {"id": "s", "path": "suites/s"}, "provider": {"name": "scripted", "model": "m"}}


def test_keep_2_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        compose_config(["keep=2"])
    assert str(info.value) == "config: keep: expected true or false, got 2"


@pytest.mark.parametrize("word", ["true", "false", "yes", "no", "1", "0", "True"])
def test_the_boolean_words_are_taken(word: str) -> None:
    assert boolean_problems([f"keep={word}", f"provider.stream={word}"]) == []


def test_a_100000_character_model_is_one_short_line() -> None:
    with pytest.raises(ConfigError) as info:
        compose_config(["provider.model=" + "m" * 100_000])
    message = str(info.value)
    assert message.startswith("config: provider.model: 'mmm") and "(100,000 characters) is too long" in message
    assert "\n" not in message and len(message) < 200


@settings(max_examples=25, deadline=None)
@given(key=st.sampled_from(sorted(boolean_keys())),
       value=st.integers(-10**6, 10**6) | st.sampled_from(["on", "off", "y", "n", "2", "-1", "10"]))
def test_a_boolean_key_takes_no_other_number_or_word(key: str, value: int | str) -> None:
    problems = boolean_problems([f"{key}={value}"])
    if value in (0, 1):
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(f"config: {key}: expected true or false, got ")
        assert problems[0].endswith(str(value) if isinstance(value, int) or value.lstrip("-").isdigit() else repr(value))


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(["model", "base_url"]), size=st.integers(0, 200_000),
       char=st.sampled_from(["m", "é", "\x00", "\n", "'"]))
def test_an_oversized_value_is_refused_in_bounded_lines(key: str, size: int, char: str) -> None:
    """The kind: any length of a provider string, through the config checks and the message."""
    value = ("http://" if key == "base_url" else "x") + char * size
    problems = config_problems({**BASE, "provider": {**BASE["provider"], key: value}})
    message = bounded_lines(problems)
    assert all(len(line) <= LINE_CHARS + 40 for line in message.splitlines())
    limit = 256 if key == "model" else 2048
    assert any(f"provider.{key}" in p and "is too long" in p for p in problems) == (len(value) > limit)
