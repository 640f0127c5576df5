"""docs/configuration.md matches the code: every key is documented and the hash table is true; what the
hash ignores and what it follows.

The hash tests read compositions (``tests/helpers/composed.py``), and the override lists of the tests after
the table are the table's own: each is composed once for both.
"""

from __future__ import annotations

import re

import pytest
from omegaconf import OmegaConf

from lab.config.compose import EffectiveConfig, compose_config
from lab.config.schema import schema_keys
from lab.config.searchpath import GROUPS
from lab.config.variants import flatten
from lab.errors import ConfigError
from lab.paths import CONF_DIR, ROOT
from tests.helpers.composed import composed

# One worker for the module: the table's compositions are shared with the tests after it.
pytestmark = pytest.mark.xdist_group("config-docs")

DOC = ROOT / "docs" / "configuration.md"
TEXT = DOC.read_text(encoding="utf-8")
HASH_HEADER = "| key | hashed | example override |"


def hash_table() -> list[tuple[str, bool, list[str]]]:
    """(key, hashed, example overrides) for every row of the hash table."""
    lines = TEXT[TEXT.index(HASH_HEADER):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        key_cell, hashed_cell, example_cell = (c.strip() for c in line.strip("|").split("|")[:3])
        key = key_cell.strip("`")
        assert hashed_cell in {"yes", "no"}, line
        rows.append((key, hashed_cell == "yes", re.findall(r"`([^`=]+=[^`]*)`", example_cell)))
    return rows


ROWS = hash_table()


def base_hash() -> str:
    return composed().config_hash()


def top_level_keys() -> list[str]:
    node = OmegaConf.load(CONF_DIR / "config.yaml")
    return [str(k) for k in node if k not in {"defaults", "hydra"}]


@pytest.mark.parametrize("key", top_level_keys())
def test_every_top_level_key_is_documented(key: str) -> None:
    assert f"| `{key}` |" in TEXT, f"docs/configuration.md has no row for `{key}`"


@pytest.mark.parametrize("group", ["suite", "provider", "mode", "agent", "variant", "sandbox", "executor"])
def test_every_group_and_its_options_are_documented(group: str) -> None:
    assert f"| `{group}` |" in TEXT
    row = next(line for line in TEXT.splitlines() if line.startswith(f"| `{group}` |"))
    # Suites and variants are open-ended (the doc names examples and `external`); the rest are closed sets.
    options = ["external"] if group == "suite" else [] if group == "variant" else \
        sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
    for option in options:
        assert f"`{option}`" in row, f"group {group}: option {option} missing from the doc"


def test_every_schema_key_is_in_the_hash_table() -> None:
    keys = {key for key, _ in flatten(schema_keys()) if key}
    keys |= {k for k, v in schema_keys().items() if v is None}
    covered = {key for key, _, _ in ROWS}
    missing = sorted(k for k in keys if k not in covered and k.split(".")[0] not in covered)
    assert not missing, f"keys without a row in the hash table: {missing}"


@pytest.mark.parametrize(("key", "hashed", "overrides"), ROWS, ids=[r[0] for r in ROWS])
def test_the_hash_table_is_true(key: str, hashed: bool, overrides: list[str]) -> None:
    if not overrides:  # no valid alternative value today: change the resolved data itself
        data = composed().data  # a copy of its own
        node = data
        *parents, leaf = key.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = f"{node[leaf]}-other"
        changed = EffectiveConfig(data=data).config_hash()
    else:
        changed = composed(*overrides).config_hash()
    assert (changed != base_hash()) == hashed, (key, overrides)
    chosen = [o for o in overrides if o.split("=", 1)[0] in GROUPS]
    if hashed and chosen and len(chosen) < len(overrides):
        # A key of a chosen preset (agent=reference's agent.version): hashed beside that preset too.
        assert changed != composed(*chosen).config_hash(), (key, overrides)


def test_an_api_key_in_the_config_is_rejected_without_echoing_it() -> None:
    with pytest.raises(ConfigError) as info:
        compose_config(["provider=openai", "provider.api_key=sk-test-0123456789abcdef"])
    assert "unknown key 'provider.api_key'" in str(info.value)
    assert "sk-test" not in str(info.value)


def test_the_default_provider_is_openai() -> None:
    """The tests below change the default configuration, whose provider answers over HTTP."""
    assert composed().data["provider"]["name"] == "openai"


def test_hash_ignores_runtime_knobs_the_endpoint_and_the_api_key_variable_name() -> None:
    for override in ("k=7", "seed=3", "jobs=4", "out=/tmp/report", "provider.base_url=http://127.0.0.1:9/v1",
                     "provider.api_key_env=OTHER_KEY", "progress=true"):
        assert composed(override).config_hash() == base_hash(), override


def test_hash_follows_measured_keys() -> None:
    for override in ("provider.model=other-model", "agent.max_output_tokens=100", "variant=no-compaction",
                     "agent.compaction.threshold=0.5", "mode=replay"):
        assert composed(override).config_hash() != base_hash(), override


def test_hash_is_stable_across_compositions() -> None:
    assert composed("k=7").config_hash() == composed("seed=3").config_hash()
