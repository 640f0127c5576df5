"""Composing every config option, and one clear line per bad override."""

from __future__ import annotations

import pytest

from lab.config.compose import compose_config
from lab.config.searchpath import GROUPS
from lab.errors import ConfigError
from lab.paths import CONF_DIR
from tests.helpers.composed import composed

# One module per worker: the batches below are composed once for all of their cases.
pytestmark = pytest.mark.xdist_group("config-compose")

OPTIONS = {group: sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml")) for group in GROUPS}
# Options that need a companion override to be complete (suite=external has no location of its own).
COMPANIONS = {("suite", "external"): ["suite.path=suites/core"]}
# Every option of every group, several groups at once: composition i selects option i of each group that has one.
CHOICES = [[(group, options[i]) for group, options in OPTIONS.items() if i < len(options)]
           for i in range(max(map(len, OPTIONS.values())))]


@pytest.mark.parametrize("choices", CHOICES, ids=lambda c: " ".join(f"{g}={o}" for g, o in c))
def test_every_group_option_composes(choices: list[tuple[str, str]]) -> None:
    config = composed(*(word for group, option in choices
                        for word in [f"{group}={option}", *COMPANIONS.get((group, option), [])]))
    assert len(config.config_hash()) == 64
    variant = dict(choices).get("variant")
    assert config.variant == (variant or "baseline")


def test_external_suite_without_a_location_is_rejected_at_compose() -> None:
    """A lone override that composes with a problem of the resolved configuration: one line."""
    with pytest.raises(ConfigError, match=r"^config: suite\.path: no suite location[^\n]*$"):
        compose_config(["suite=external"])


# Overrides that compose, each with a problem of the resolved configuration: one compose lists them all.
DATA_PROBLEMS = [
    ("+kk=3", "unknown key 'kk'"),
    ("k=0", "k: 0 is less than the minimum of 1"),
    ("allow=[write,bogus]", "allow[1]: 'bogus' is not one of"),
    ("rates.input=3", "give both rates.input and rates.output"),
    ("suite_dir=/nonexistent/lab-suites", "config: suite_dir: /nonexistent/lab-suites is not a directory"),
    ("agent.limits.tool_output_chars=300000",
     "agent.limits.tool_output_chars: 300000 is greater than agent.limits.max_context_chars (200000)"),
    ("provider=openai provider.base_url=ftp://x", "provider.base_url: 'ftp://x' does not match '^https?://'"),
    ("tasks=[a,a]", "config: tasks: ['a', 'a'] has non-unique elements"),
    ("agent.system_prompt=''", "config: agent.system_prompt: '' should be non-empty"),
]
# Overrides Hydra refuses: each is composed again with the good ones before it (none here) and named alone.
COMPOSE_ERRORS = [
    ("kk=3", "unknown key 'kk'"),
    ("agent.limits.nope=1", "unknown key 'agent.limits.nope'"),
    ("k=abc", "bad value in override 'k=abc'"),
    ("suite=nope", "no option 'nope' in group 'suite'"),
    ("hydra/job_logging=nope",  # one of Hydra's own groups: its options, not conf/'s
     "config: no option 'nope' in Hydra's group 'hydra/job_logging' (available: default, disabled, none, stdout)"),
    ("k=[1", "cannot parse override 'k=[1'"),
    ("variant=baseline,no-compaction", "'variant=baseline,no-compaction' is a sweep"),
    ("tasks=edit-file", "not a ListConfig, list or tuple. (a list: write tasks=[edit-file])"),
    ("allow=write", "(a list: write allow=[write])"),
    ("tasks=edit-file,add", "is a sweep, and this command runs one configuration; sweep with `lab run -m … "
                            "tasks=edit-file,add`; for a list, write tasks=[edit-file,add]"),
    *((f"suite={value}", f"suite={value}: the option name reads as a number or boolean; quote it")
      for value in ("inf", "1", "true")),
]
BATCHES = {"data": DATA_PROBLEMS, "compose": COMPOSE_ERRORS}


@pytest.fixture(scope="module")
def batch_lines() -> dict[str, list[str]]:
    """The error lines of composing each batch of bad overrides at once."""
    lines = {}
    for name, cases in BATCHES.items():
        with pytest.raises(ConfigError) as info:
            compose_config([word for override, _ in cases for word in override.split(" ")])
        lines[name] = str(info.value).splitlines()
    return lines


@pytest.mark.parametrize(("batch", "override", "message"),
                         [(name, override, message) for name, cases in BATCHES.items() for override, message in cases])
def test_bad_override_is_one_line_naming_the_key(batch_lines: dict[str, list[str]], batch: str, override: str,
                                                 message: str) -> None:
    """Each bad override of a batch gives exactly one line, and the batch nothing else."""
    lines = batch_lines[batch]
    assert len(lines) == len(BATCHES[batch]), lines
    assert sum(message in line for line in lines) == 1, (override, lines)


def test_replay_defaults_k_to_one_and_live_to_the_suite_default() -> None:
    assert composed("mode=replay").k == 1
    assert composed().k == 5
    assert composed("mode=replay", "k=3").k == 3


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


def test_a_broken_interpolation_names_the_override_in_one_line() -> None:
    """A lone override Hydra refuses: one line (the base configuration adds none)."""
    with pytest.raises(ConfigError, match=r"^config: .*provider.model.*Interpolation key 'nope' not found[^\n]*$"):
        compose_config(["provider.model=${nope}"])
