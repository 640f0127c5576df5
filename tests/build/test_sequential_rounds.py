"""A sequential variants command composes each variant once: later rounds take the first round's
composition with their own k and preflight (lab.build.sequential.SequentialRun.round_config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.build.sequential import derived_config, parse_sequential
from lab.config.compose import EffectiveConfig, compose_config
from lab.config.searchpath import ENV as USER_CONF_ENV

COMMON = ["suite=core", "provider=scripted", "variant=no-compaction"]


def test_a_later_round_is_the_first_rounds_composition_with_its_k_and_as_composing_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    composed: list[list[str]] = []

    def counting(words: list[str]) -> EffectiveConfig:  # a wrapper counting compositions, not a mock
        composed.append(list(words))
        return compose_config(words)

    monkeypatch.setattr("lab.config.cache.compose_cached", counting)
    run = parse_sequential(["suite=core", "variant=baseline,no-compaction", "provider=scripted", "k=4",
                            "sequential=true", "round=2"])
    assert run.round_overrides(1)[-2:] == ["k=4", "preflight=false"]  # the words a later round adds
    first = run.round_config("no-compaction", [*COMMON, "k=2"])
    later = run.round_config("no-compaction", [*COMMON, "k=4", "preflight=false"])
    assert composed == [[*COMMON, "k=2"]]  # the later round was not composed again
    fresh = compose_config([*COMMON, "k=4", "preflight=false"])
    assert (later.data, later.variant, later.overrides) == (fresh.data, fresh.variant, fresh.overrides)
    assert later.config_hash() == fresh.config_hash() == first.config_hash()
    assert (later.k, later.data["preflight"], first.k, first.data["preflight"]) == (4, False, 2, True)


@pytest.mark.parametrize("words", [
    [*COMMON, "k=4", "seed=1"],  # another word
    [*COMMON[:2], "k=4"],  # a word left out
    [*COMMON, "k=04"], [*COMMON, "k=4.0"], [*COMMON, "k=0"], [*COMMON, "preflight=yes"],  # not a plain value
    [*COMMON, "k=4", r"agent.system_prompt='${k} times'"],  # an interpolation may read k
    [*COMMON, "++k=4"], [*COMMON, "k=2", "+preflight=false"],  # another form of the key
    [*COMMON, "preflight=false"],  # k left out, which the first composition had
], ids=repr)
def test_a_round_that_may_differ_from_composing_is_composed(words: list[str]) -> None:
    first = EffectiveConfig(data={"k": 2, "preflight": True}, overrides=(*COMMON, "k=2"))
    assert derived_config(first, words) is None


def test_user_config_directories_or_a_refused_value_are_composed(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    first: Any = compose_config([*COMMON, "k=2"])
    assert derived_config(first, [*COMMON, "k=3"]) is not None
    assert derived_config(first, [*COMMON, "k=999999999"]) is None  # past the schema's maximum
    monkeypatch.setenv(USER_CONF_ENV, str(tmp_path))
    assert derived_config(first, [*COMMON, "k=3"]) is None
