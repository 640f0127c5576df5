"""Variants may only override measured-config keys (SPEC VA1), checked before the first run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lab.config.compose import compose_config
from lab.config.schema import is_measured_key
from lab.config.variants import all_variant_problems, flatten
from lab.errors import ConfigError
from lab.paths import CONF_DIR
from tests.helpers.composed import composed

# One worker for the module: the bad variant below is composed once for all of its cases.
pytestmark = pytest.mark.xdist_group("config-variants")

HEADER = "# @package _global_\n"


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    """A copy of the checkout's conf/ where tests add variant files."""
    shutil.copytree(CONF_DIR, tmp_path / "conf")
    return tmp_path / "conf"


def add_variant(conf: Path, name: str, text: str) -> None:
    (conf / "variant" / f"{name}.yaml").write_text(text, encoding="utf-8")


def test_all_shipped_variants_are_valid() -> None:
    """Each also composes as its own choice: tests/config/test_config.py::test_every_group_option_composes."""
    assert all_variant_problems() == {p.stem: [] for p in (CONF_DIR / "variant").glob("*.yaml")}


def test_a_measured_variant_changes_the_hash(conf: Path) -> None:
    add_variant(conf, "terse", HEADER + "agent:\n  max_output_tokens: 256\nprovider:\n  model: other\n")
    base = composed().config_hash()  # conf is a copy of conf/ (and terse.yaml): its baseline composes the same
    assert compose_config(["variant=terse"], conf_dir=conf).config_hash() != base


BAD_KEYS = [
    ("provider:\n  base_url: http://127.0.0.1:9/v1\n", "provider.base_url", "not a measured-config key"),
    ("provider:\n  name: openai\n", "provider.name", "not a measured-config key"),
    ("provider:\n  api_key_env: OTHER_KEY\n", "provider.api_key_env", "not a measured-config key"),
    ("suite_dir: /tmp/elsewhere\n", "suite_dir", "not a measured-config key"),
    ("cassette_dir: /tmp/c\n", "cassette_dir", "not a measured-config key"),
    ("jobs: 4\n", "jobs", "not a measured-config key"),
    ("allow: [write, process, external]\n", "allow", "not a measured-config key"),
    ("mode:\n  name: replay\n", "mode.name", "not a measured-config key"),
    ("agent:\n  compaction:\n    bogus: 1\n", "agent.compaction.bogus", "unknown key"),
    ("agent:\n  nope: 1\n", "agent.nope", "unknown key"),
    ("defaults:\n  - override /provider: openai\n", "defaults", "may not have a defaults list"),
    ("agent:\n  system_prompt: ${oc.env:HOME}\n", "agent.system_prompt", "interpolations"),
]


@pytest.fixture(scope="module")
def bad_variant(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One variant holding every bad key of :data:`BAD_KEYS` (each is checked on its own), composed once:
    its file and the error lines."""
    from omegaconf import OmegaConf

    conf = tmp_path_factory.mktemp("bad-variant") / "conf"
    shutil.copytree(CONF_DIR, conf)
    body = OmegaConf.merge(*(OmegaConf.create(text) for text, _, _ in BAD_KEYS))
    add_variant(conf, "bad", HEADER + OmegaConf.to_yaml(body))
    with pytest.raises(ConfigError) as info:
        compose_config(["variant=bad"], conf_dir=conf)
    return conf / "variant" / "bad.yaml", str(info.value).splitlines()


@pytest.mark.parametrize(("body", "key", "why"), BAD_KEYS)
def test_a_bad_variant_is_rejected_naming_file_and_key(bad_variant: tuple[Path, list[str]], body: str, key: str,
                                                       why: str) -> None:
    path, lines = bad_variant
    assert len(lines) == len(BAD_KEYS), lines  # one line per bad key, nothing else
    prefix = f"config: variant bad ({path}): {key}: "
    assert any(line.startswith(prefix) and why in line for line in lines), lines


def test_every_bad_key_of_a_variant_is_listed_with_other_problems(conf: Path) -> None:
    add_variant(conf, "bad", HEADER + "provider:\n  base_url: http://x/v1\n  model: m\njobs: 3\n")
    with pytest.raises(ConfigError) as info:
        compose_config(["variant=bad", "kk=1"], conf_dir=conf)
    lines = str(info.value).splitlines()
    assert [line.split(": ")[2] for line in lines[:2]] == ["provider.base_url", "jobs"]
    assert "config: unknown key 'kk' (see conf/config.yaml for valid keys)" in lines
    assert len(lines) == 3


def test_a_variant_without_the_global_package_is_rejected(conf: Path) -> None:
    add_variant(conf, "nopkg", "agent:\n  temperature: 0.2\n")
    with pytest.raises(ConfigError, match=r"variant nopkg .*: the first lines must say '# @package _global_'"):
        compose_config(["variant=nopkg"], conf_dir=conf)


def test_a_broken_yaml_variant_is_one_clear_line(conf: Path) -> None:
    add_variant(conf, "broken", HEADER + "agent: [unclosed\n")
    with pytest.raises(ConfigError, match=r"variant broken .*: not valid YAML"):
        compose_config(["variant=broken"], conf_dir=conf)


def test_the_default_variant_is_checked_too(conf: Path) -> None:
    add_variant(conf, "baseline", HEADER + "k: 3\n")
    with pytest.raises(ConfigError, match=r"variant baseline .*: k: not a measured-config key"):
        compose_config([], conf_dir=conf)


@pytest.mark.parametrize(("key", "measured"), [
    ("agent.max_output_tokens", True), ("agent.compaction.enabled", True), ("provider.model", True),
    ("provider.reasoning_effort", True), ("provider.base_url", False), ("agent.bogus", False),
    ("jobs", False), ("mode.name", False)])
def test_is_measured_key(key: str, measured: bool) -> None:
    assert is_measured_key(key) is measured


def test_flatten_keeps_lists_as_leaves() -> None:
    assert flatten({"agent": {"tools": ["a"], "limits": {}}, "k": 1}) == [("agent.tools", ["a"]), ("k", 1)]
