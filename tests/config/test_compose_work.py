"""What a compose does only once: the schema's key tree per process, a variant file's check per text,
and one Hydra compose (not one per override) to list the other problems beside an invalid variant."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import lab.config.compose as compose
from lab.config.schema import schema_keys
from lab.config.variants import _text_problems, variant_problems
from lab.errors import ConfigError
from lab.paths import CONF_DIR


def test_the_schema_key_tree_is_built_once_per_process() -> None:
    first = schema_keys()
    assert schema_keys() is first
    assert first["agent"]["limits"]["max_context_chars"] is None and first["k"] is None


def test_a_variant_file_is_parsed_once_per_text_and_again_when_edited(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    (conf / "variant").mkdir(parents=True)
    path = conf / "variant" / "mine.yaml"
    path.write_text("# @package _global_\nagent:\n  max_output_tokens: 100\njobs: 2\n", encoding="utf-8")
    before = _text_problems.cache_info().misses
    first = variant_problems("mine", conf)
    assert variant_problems("mine", conf) == first
    assert [line.split(": ")[2] for line in first] == ["jobs"]
    assert _text_problems.cache_info().misses == before + 1, "the same text is not parsed twice"
    path.write_text("# @package _global_\nagent:\n  nope: 1\n", encoding="utf-8")
    assert [line.split(": ")[2] for line in variant_problems("mine", conf)] == ["agent.nope"]
    assert _text_problems.cache_info().misses == before + 2


def test_an_invalid_variant_with_sound_overrides_composes_once(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    (conf / "variant" / "bad.yaml").write_text("# @package _global_\njobs: 3\n", encoding="utf-8")
    composed: list[list[str]] = []
    real = compose._compose

    def spy(overrides: list[str], conf_dir: Path) -> Any:
        composed.append(list(overrides))
        return real(overrides, conf_dir)

    # A spy around the lab's own compose step (Hydra runs for real): the count is the behaviour.
    monkeypatch.setattr(compose, "_compose", spy)
    with pytest.raises(ConfigError) as info:
        compose.compose_config(["variant=bad", "k=3", "seed=1", "jobs=0"], conf_dir=conf)
    assert str(info.value).splitlines() == [
        f"config: variant bad ({conf / 'variant' / 'bad.yaml'}): jobs: not a measured-config key, so it is outside "
        "the config hash; a variant may set only agent.*, provider.model, provider.reasoning_effort",
        "config: jobs: 0 is less than the minimum of 1",
    ]
    assert composed == [["k=3", "seed=1", "jobs=0", "variant=baseline"]]
