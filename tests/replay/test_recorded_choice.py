"""A replay takes the provider and model its cassettes were recorded with; an explicit choice wins, said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import ConfigError
from lab.replay.recorded import adopted_overrides, as_overrides, recorded_choice

WHERE = Path("/c/core")


def _cassettes(root: Path, models: dict[str, str], provider: str = "openai") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for task, model in models.items():
        (root / f"{task}.jsonl").write_text(json.dumps({"type": "header", "provider": provider, "model": model}) + "\n")
    return root


def test_recorded_choice_reads_only_the_selected_tasks(tmp_path: Path) -> None:
    root = _cassettes(tmp_path / "core", {"a": "m1", "b": "m2"})
    assert recorded_choice(root, ["a"], who="replay") == ("openai", "m1")
    with pytest.raises(ConfigError, match=r"^replay: .*a\.jsonl with openai/m1, b\.jsonl with openai/m2"):
        recorded_choice(root, who="replay")
    assert recorded_choice(root, ["missing"]) is None


def test_nothing_given_takes_both_and_says_so() -> None:
    adopted, line = adopted_overrides(("openai", "stub-model"), ["mode=replay"], ("scripted", "scripted-v1"), WHERE)
    assert adopted == ["provider=openai", "provider.model=stub-model"]
    assert line == (f"replay: with openai/stub-model, the provider and model the cassettes in {WHERE} were "
                    "recorded with (provider=/provider.model= choose others)")


def test_the_same_choice_is_silent() -> None:
    assert adopted_overrides(("scripted", "scripted-v1"), [], ("scripted", "scripted-v1"), WHERE) == ([], None)
    assert adopted_overrides(None, [], ("scripted", "x"), WHERE) == ([], None)


def test_an_explicit_model_wins_and_is_named() -> None:
    adopted, line = adopted_overrides(("openai", "stub-model"), ["provider.model=other"], ("scripted", "other"), WHERE)
    assert adopted == ["provider=openai"]
    assert line is not None and line.startswith("replay: provider.model=other given, which wins over the cassettes")
    assert "recorded with openai/stub-model" in line


def test_an_explicit_other_provider_takes_nothing_recorded() -> None:
    adopted, line = adopted_overrides(("openai", "stub-model"), ["+provider=scripted"], ("scripted", "v1"), WHERE)
    assert adopted == []
    assert line is not None and line.startswith("replay: provider=scripted given, which wins")


def test_an_explicit_choice_equal_to_the_recording_is_silent() -> None:
    overrides = ["provider=openai", "provider.model=stub-model"]
    assert adopted_overrides(("openai", "stub-model"), overrides, ("openai", "stub-model"), WHERE) == ([], None)


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00$"), min_size=1, max_size=20))
def test_any_recorded_model_is_one_override_hydra_reads_back(model: str) -> None:
    parsed = OverridesParser.create().parse_override(as_overrides(("openai", model))[1])
    assert parsed.key_or_group == "provider.model" and parsed.value() == model


@pytest.mark.parametrize("model", ["1e3", "1", "True", "NaN", "inf", "null", "a b", "x,y", "it's", "end\\"])
def test_words_hydra_would_type_or_split_are_quoted(model: str) -> None:
    parsed = OverridesParser.create().parse_override(as_overrides(("openai", model))[1])
    assert parsed.value() == model
