"""Composing every config option, and one clear line per bad override."""

from __future__ import annotations

import pytest

from lab.config.compose import compose_config
from lab.errors import ConfigError
from lab.paths import CONF_DIR
from tests.helpers.composed import composed

GROUPS = ("suite", "provider", "mode", "agent", "variant")


# Options that need a companion override to be complete (suite=external has no location of its own).
COMPANIONS = {("suite", "external"): ["suite.path=suites/core"]}


@pytest.mark.parametrize(("group", "option"), [
    (g, p.stem) for g in GROUPS for p in sorted((CONF_DIR / g).glob("*.yaml"))])
def test_every_group_option_composes(group: str, option: str) -> None:
    config = composed(f"{group}={option}", *COMPANIONS.get((group, option), []))
    assert len(config.config_hash()) == 64


def test_external_suite_without_a_location_is_rejected_at_compose() -> None:
    with pytest.raises(ConfigError, match=r"config: suite\.path: no suite location"):
        compose_config(["suite=external"])


@pytest.mark.parametrize(("override", "message"), [
    ("kk=3", "unknown key 'kk'"),
    ("+kk=3", "unknown key 'kk'"),
    ("agent.limits.nope=1", "unknown key 'agent.limits.nope'"),
    ("k=abc", "bad value in override 'k=abc'"),
    ("k=0", "k: 0 is less than the minimum of 1"),
    ("suite=nope", "no option 'nope' in group 'suite'"),
    ("allow=[write,bogus]", "allow[1]: 'bogus' is not one of"),
    ("rates.input=3", "give both rates.input and rates.output"),
    ("k=[1", "cannot parse override 'k=[1'"),
    ("variant=baseline,no-compaction", "'variant=baseline,no-compaction' is a sweep"),
    ("suite_dir=/nonexistent/lab-suites", "config: suite_dir: /nonexistent/lab-suites is not a directory"),
    ("agent.limits.tool_output_chars=300000",
     "agent.limits.tool_output_chars: 300000 is greater than agent.limits.max_context_chars (200000)"),
    ("provider=openai provider.base_url=ftp://x", "provider.base_url: 'ftp://x' does not match '^https?://'"),
    ("tasks=[a,a]", "config: tasks: ['a', 'a'] has non-unique elements"),
    ("agent.system_prompt=''", "config: agent.system_prompt: '' should be non-empty"),
    ("tasks=edit-file", "not a ListConfig, list or tuple. (a list: write tasks=[edit-file])"),
    ("allow=write", "(a list: write allow=[write])"),
    ("tasks=edit-file,add", "is a sweep, and this command runs one configuration; sweep with `lab run -m … "
                            "tasks=edit-file,add`; for a list, write tasks=[edit-file,add]"),
])
def test_bad_override_is_one_line_naming_the_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        compose_config(override.split(" "))
    text = str(info.value)
    assert message in text
    assert "\n" not in text


def test_replay_defaults_k_to_one_and_live_to_the_suite_default() -> None:
    assert compose_config(["mode=replay"]).k == 1
    assert composed().k == 5
    assert compose_config(["mode=replay", "k=3"]).k == 3


def test_hash_ignores_runtime_knobs_and_endpoint() -> None:
    base = composed("provider=openai").config_hash()
    for override in ("k=7", "seed=3", "jobs=4", "out=/tmp/x", "provider.base_url=http://127.0.0.1:9/v1",
                     "provider.api_key_env=OTHER_KEY", "progress=true"):
        assert compose_config(["provider=openai", override]).config_hash() == base, override


def test_hash_follows_measured_keys() -> None:
    base = composed().config_hash()
    for override in ("provider.model=other", "agent.max_output_tokens=100", "variant=no-compaction",
                     "agent.compaction.threshold=0.5", "mode=replay"):
        assert compose_config([override]).config_hash() != base, override


def test_hash_is_stable_across_compositions() -> None:
    assert compose_config(["k=3"]).config_hash() == compose_config(["seed=9"]).config_hash()


def test_every_problem_is_listed_once_in_order() -> None:
    with pytest.raises(ConfigError) as info:
        compose_config(["kk=1", "k=abc", "jobs=0", "seed=-1", "agent.nope=1"])
    assert str(info.value).splitlines() == [
        "config: unknown key 'kk' (see conf/config.yaml for valid keys)",
        "config: bad value in override 'k=abc': Value 'abc' of type 'str' could not be converted to Integer",
        "config: unknown key 'agent.nope' (see conf/config.yaml for valid keys)",
        "config: jobs: 0 is less than the minimum of 1",
        "config: seed: -1 is less than the minimum of 0",
    ]


@pytest.mark.parametrize("value", ["inf", "1", "true"])
def test_an_option_name_that_reads_as_a_number_says_how_to_quote_it(value: str) -> None:
    with pytest.raises(ConfigError, match=f"suite={value}: the option name reads as a number or boolean; quote it"):
        compose_config([f"suite={value}"])


def test_a_broken_interpolation_names_the_override() -> None:
    with pytest.raises(ConfigError, match=r"provider.model.*Interpolation key 'nope' not found"):
        compose_config(["provider.model=${nope}"])
