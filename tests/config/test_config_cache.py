"""The composed configuration remembered between commands (lab.config.cache).

Every test composes a copy of the checkout's ``conf/`` (files aged so that
they count as settled), once to remember it, then after a change: the
cached path must give exactly what a fresh compose gives, and any change to
what composition reads must compose again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.config.cache as config_cache
from lab.config.cache import compose_cached
from lab.config.compose import compose_config
from lab.errors import ConfigError
from lab.paths import CONF_DIR
from tests.helpers.lab_process import ROOT, command_env

# One worker for the module: its module-scoped copies of conf/ are composed once.
pytestmark = pytest.mark.xdist_group("config-cache")

OLD_S = 1_000_000_000
CONF_FILES = sorted(p.relative_to(CONF_DIR).as_posix() for p in CONF_DIR.rglob("*.yaml"))


def age(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.utime(path, (OLD_S, OLD_S))


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    copy = tmp_path / "conf"
    shutil.copytree(CONF_DIR, copy)
    age(copy)
    return copy


class Composed(Exception):
    """Raised by :func:`misses` instead of composing: the cache was asked and did not answer."""


@pytest.fixture
def composes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The override lists actually composed with Hydra (a spy around the real compose_config:
    a cache hit is an observable absence of a call, not a mocked behaviour)."""
    calls: list[list[str]] = []
    real: Callable[..., Any] = compose_config

    def spy(overrides: list[str], **kwargs: Any) -> Any:
        calls.append(list(overrides))
        return real(overrides, **kwargs)

    monkeypatch.setattr(config_cache, "compose_config", spy)
    return calls


@pytest.fixture
def misses(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Call it to make every later compose raise :class:`Composed` instead (a cache miss observed
    where it happens, without paying for the compose that would follow)."""
    def refuse(overrides: list[str], **kwargs: Any) -> Any:
        raise Composed(overrides)

    return lambda: monkeypatch.setattr(config_cache, "compose_config", refuse)


def cached(conf: Path, tmp_path: Path, overrides: list[str]) -> Any:
    return compose_cached(overrides, conf_dir=conf, cache=tmp_path / "cache")


@pytest.mark.parametrize("overrides", [[], ["suite=core", "k=3"], ["mode=replay", "provider=scripted"],
                                       ["variant=no-compaction"], ["provider.model=other", "seed=7"],
                                       ["agent=reference", "provider=scripted"], ["sandbox=none", "jobs=2"]])
def test_a_remembered_configuration_is_the_composed_one(conf: Path, tmp_path: Path, composes: list[list[str]],
                                                        overrides: list[str]) -> None:
    first = cached(conf, tmp_path, overrides)  # composed by the real compose_config
    again = cached(conf, tmp_path, overrides)
    assert composes == [overrides], "the second call is served from the cache"
    assert again == first and again is not first
    assert again.config_hash() == first.config_hash() and again.config_hash("live") == first.config_hash("live")
    assert again.measured_view() == first.measured_view() and again.variant == first.variant


@pytest.fixture(scope="module")
def shared_conf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of conf/ (and its cache beside it) for the edit tests below, each of which puts
    back what it edited."""
    root = tmp_path_factory.mktemp("shared")
    shutil.copytree(CONF_DIR, root / "conf")
    age(root / "conf")
    return root / "conf"


@pytest.mark.parametrize("name", CONF_FILES)
def test_editing_any_config_file_composes_again(shared_conf: Path, misses: Callable[[], None], name: str) -> None:
    """Remembered (composed once per module), edited: the cache does not answer; put back: it does."""
    conf, where = shared_conf, shared_conf.parent
    cached(conf, where, ["suite=core"])  # composes in the first of these tests only
    misses()
    assert cached(conf, where, ["suite=core"]).data["suite"]["id"] == "core"  # remembered: no compose
    original = (conf / name).read_bytes()
    try:
        with (conf / name).open("a", encoding="utf-8") as fh:
            fh.write("\n# edited\n")
        with pytest.raises(Composed):
            cached(conf, where, ["suite=core"])
    finally:
        (conf / name).write_bytes(original)
    cached(conf, where, ["suite=core"])  # the file holds what it held: remembered again


def test_an_edit_that_keeps_size_and_mtime_composes_again(conf: Path, tmp_path: Path,
                                                          composes: list[list[str]]) -> None:
    first = cached(conf, tmp_path, ["suite=core"])
    text = (conf / "config.yaml").read_text(encoding="utf-8")
    assert "seed: 0 " in text
    (conf / "config.yaml").write_text(text.replace("seed: 0 ", "seed: 5 "), encoding="utf-8")
    os.utime(conf / "config.yaml", (OLD_S, OLD_S))
    second = cached(conf, tmp_path, ["suite=core"])
    assert (first.seed, second.seed, len(composes)) == (0, 5, 2)  # the second composed by the real compose_config


def test_a_new_option_file_composes_again(conf: Path, tmp_path: Path, composes: list[list[str]]) -> None:
    with pytest.raises(ConfigError, match="no option 'terse'"):
        cached(conf, tmp_path, ["variant=terse"])
    cached(conf, tmp_path, [])
    (conf / "variant" / "terse.yaml").write_text("# @package _global_\nagent:\n  max_output_tokens: 512\n",
                                                 encoding="utf-8")
    assert cached(conf, tmp_path, ["variant=terse"]).data["agent"]["max_output_tokens"] == 512
    assert cached(conf, tmp_path, []).variant == "baseline"
    assert len(composes) == 4  # the failed compose is not remembered; the new file changes conf/variant


def test_another_override_list_is_another_entry(conf: Path, tmp_path: Path, composes: list[list[str]]) -> None:
    assert cached(conf, tmp_path, ["k=2"]).k == 2
    assert cached(conf, tmp_path, ["k=3"]).k == 3
    assert cached(conf, tmp_path, ["k=2"]).k == 2
    assert composes == [["k=2"], ["k=3"]]


def test_an_environment_variable_the_configuration_reads_composes_again(
        conf: Path, tmp_path: Path, composes: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert cached(conf, tmp_path, ["provider=openai"]).data["provider"]["base_url"] == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:10/v1")
    assert cached(conf, tmp_path, ["provider=openai"]).data["provider"]["base_url"] == "http://127.0.0.1:10/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert cached(conf, tmp_path, ["provider=openai"]).data["provider"]["base_url"] == "https://api.openai.com/v1"
    assert len(composes) == 3
    cached(conf, tmp_path, ["provider=openai"])
    assert len(composes) == 3


def test_an_override_reading_the_environment_composes_again(conf: Path, tmp_path: Path, composes: list[list[str]],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = ["provider.model=${oc.env:LAB_TEST_MODEL,fallback}"]
    monkeypatch.setenv("LAB_TEST_MODEL", "m1")
    assert cached(conf, tmp_path, overrides).data["provider"]["model"] == "m1"
    monkeypatch.setenv("LAB_TEST_MODEL", "m2")
    assert cached(conf, tmp_path, overrides).data["provider"]["model"] == "m2"
    assert len(composes) == 2


@pytest.mark.parametrize("overrides", [["provider.model=${now:%H%M%S%f}"],
                                       ["provider.model=${oc.env:SOME_TOKEN,x}"],
                                       ["+provider.headers.X-Api-Token=abc"],
                                       # Any header: its value may be a secret whatever its name.
                                       ["+provider.headers.X-Title=lab"],
                                       ["+provider.headers.X-Org=" + "hf_" + "q8Wd3Rt6Yp1Lk9Zx4Cv7Bn2Mm5Jh0Gf3Ds"],
                                       # A key shape anywhere in an override or the configuration.
                                       ["provider.model=" + "gsk_" + "q8Wd3Rt6Yp1Lk9Zx4Cv7Bn2Mm5Jh0Gf3Ds6Aa1Ss"]])
def test_configurations_that_must_not_be_remembered_are_composed_every_time(
        conf: Path, tmp_path: Path, composes: list[list[str]], misses: Callable[[], None],
        overrides: list[str]) -> None:
    cached(conf, tmp_path, overrides)
    assert composes == [overrides]
    misses()
    with pytest.raises(Composed):
        cached(conf, tmp_path, overrides)
    assert not list((tmp_path / "cache").rglob("*.json"))


ESCAPED_DOLLAR = ["\\x24", "\\u0024", "\\U00000024"]
"""YAML double-quoted escapes of ``$``: the parsed value holds an interpolation the raw text does not show."""


@pytest.mark.parametrize("dollar", ESCAPED_DOLLAR)
def test_an_escaped_interpolation_in_a_config_file_is_seen(conf: Path, tmp_path: Path, composes: list[list[str]],
                                                           dollar: str) -> None:
    agent = conf / "agent" / "builtin.yaml"
    agent.write_text(agent.read_text(encoding="utf-8").replace(
        "system_prompt: null", f'system_prompt: "t={dollar}{{now:%H%M%S%f}}"'),
        encoding="utf-8")
    first = cached(conf, tmp_path, ["agent=builtin"])
    assert first.data["agent"]["system_prompt"].startswith("t=")
    cached(conf, tmp_path, ["agent=builtin"])
    assert len(composes) == 2  # ${now:…} is never remembered, however it is spelled
    assert not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("dollar", ESCAPED_DOLLAR)
def test_an_escaped_environment_read_in_a_config_file_composes_again(
        conf: Path, tmp_path: Path, composes: list[list[str]], monkeypatch: pytest.MonkeyPatch, dollar: str) -> None:
    agent = conf / "agent" / "builtin.yaml"
    agent.write_text(agent.read_text(encoding="utf-8").replace(
        "system_prompt: null", f'system_prompt: "m={dollar}{{oc.env:LAB_TEST_MODEL,x}}"'), encoding="utf-8")
    monkeypatch.setenv("LAB_TEST_MODEL", "m1")
    assert cached(conf, tmp_path, ["agent=builtin"]).data["agent"]["system_prompt"] == "m=m1"
    monkeypatch.setenv("LAB_TEST_MODEL", "m2")
    assert cached(conf, tmp_path, ["agent=builtin"]).data["agent"]["system_prompt"] == "m=m2"
    assert len(composes) == 2
    assert cached(conf, tmp_path, ["agent=builtin"]).data["agent"]["system_prompt"] == "m=m2"
    assert len(composes) == 2  # remembered, with the variable it reads


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["$", "\\x24", "\\u0024", "\\U00000024", "{", "\\x7b", "\\u007b", "}", "\\x7d",
                                 "now:%f", "oc.env:HOME", "a", " "]), max_size=12))
def test_the_strings_checked_are_the_parsed_ones(pieces: list[str]) -> None:
    import yaml

    from lab.config.cache import _yaml_strings

    text = f'a: "{"".join(pieces)}"\n"k{"".join(pieces)}": [x, "{"".join(pieces)}"]\n'
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        assert _yaml_strings(text) is None
        return
    found = _yaml_strings(text)
    assert found is not None
    for value in [parsed["a"], *parsed]:  # the value and the key, as Hydra gets them
        assert value in found


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["$", "{", "}", "\n", "\n\n", " ", "'", "''", '"', "a", "#", ">", "|", "- "]),
                max_size=14), st.sampled_from(['"', "'", ""]))
def test_without_a_backslash_a_parsed_interpolation_shows_in_the_text(pieces: list[str], quote: str) -> None:
    """Why only files holding a backslash are parsed: folding, quotes and block scalars never make ``${``."""
    import yaml

    text = f"a: {quote}{''.join(pieces)}{quote}\n"
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return
    values = [parsed] if not isinstance(parsed, dict) else [*parsed, *parsed.values()]
    if any(isinstance(v, str) and "${" in v for v in values):
        assert "${" in text


def test_a_same_size_rewrite_with_its_mtime_put_back_composes_again(conf: Path, tmp_path: Path,
                                                                      composes: list[list[str]]) -> None:
    """Written just now and remembered at once; then rewritten in the same clock tick, same size,
    mtime put back: the content check sees it (no file time is trusted)."""
    config = conf / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    times = config.stat()
    assert cached(conf, tmp_path, []).data["seed"] == 0
    cached(conf, tmp_path, [])
    assert len(composes) == 1
    config.write_text(config.read_text(encoding="utf-8").replace("\nseed: 0 ", "\nseed: 7 "), encoding="utf-8")
    os.utime(config, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert config.stat().st_size == times.st_size
    assert cached(conf, tmp_path, []).data["seed"] == 7
    assert len(composes) == 2


@pytest.fixture(scope="module")
def k4_entry(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bytes]:
    """A copy of conf/ and the entry remembered for ``k=4`` in it (composed once for the damage
    tests below, each of which damages a copy of its own): (conf, entry file name, entry bytes)."""
    root = tmp_path_factory.mktemp("k4")
    shutil.copytree(CONF_DIR, root / "conf")
    age(root / "conf")
    cached(root / "conf", root, ["k=4"])
    (entry,) = (root / "cache" / "config").glob("*.json")
    return root / "conf", entry.name, entry.read_bytes()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign", "other overrides"])
def test_a_corrupt_or_foreign_entry_is_composed_again(k4_entry: tuple[Path, str, bytes], tmp_path: Path,
                                                       misses: Callable[[], None], damage: str) -> None:
    conf, name, pristine = k4_entry
    entry = tmp_path / "cache" / "config" / name
    entry.parent.mkdir(parents=True)
    entry.write_bytes(pristine)
    misses()
    assert cached(conf, tmp_path, ["k=4"]).k == 4  # the entry as written: remembered
    doc = json.loads(pristine)
    if damage == "truncate":
        entry.write_bytes(pristine[:100])
    elif damage == "garbage":
        entry.write_bytes(b"\x00\xff" * 10)
    elif damage == "foreign":
        entry.write_text(json.dumps({**doc, "schemaVersion": 99, "data": {"k": 99}}), encoding="utf-8")
    else:
        entry.write_text(json.dumps({**doc, "ident": {**doc["ident"], "overrides": ["k=99"]},
                                     "data": {**doc["data"], "k": 99}}), encoding="utf-8")
    with pytest.raises(Composed):
        cached(conf, tmp_path, ["k=4"])


def test_suite_dir_decides_again_when_the_suite_appears(conf: Path, tmp_path: Path, composes: list[list[str]]) -> None:
    suites = tmp_path / "suites"
    (suites / "core").mkdir(parents=True)
    age(suites)
    overrides = [f"suite_dir={suites}", "suite=core"]
    assert cached(conf, tmp_path, overrides).data["suite"]["path"] == "suites/core"  # the bundled one
    (suites / "core" / "suite.json").write_text("{}", encoding="utf-8")
    external = cached(conf, tmp_path, overrides)
    assert external.data["suite"]["path"] is None and external.data["suite"]["id"] == "core"
    assert len(composes) == 2


def test_a_remembered_compose_loads_neither_hydra_nor_omegaconf(tmp_path: Path) -> None:
    """What the cache is for: the second command composes nothing (a real process each time)."""
    code = ("import json, sys; from lab.config.cache import compose_cached; "
            "c = compose_cached(['suite=core', 'k=2']); "
            "print(json.dumps({'hydra': 'hydra' in sys.modules, 'omegaconf': 'omegaconf' in sys.modules, "
            "'hash': c.config_hash(), 'data': c.data}))")
    env = command_env()
    env["LAB_DATA_DIR"] = str(tmp_path / "runs")
    env["LAB_CACHE_DIR"] = str(tmp_path / "cache")  # its own: the first child must compose

    def child() -> dict[str, Any]:
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                             check=True, timeout=120).stdout
        result: dict[str, Any] = json.loads(out)
        return result

    first, second = child(), child()
    fresh = compose_config(["suite=core", "k=2"])
    assert (first["hydra"], first["omegaconf"]) == (True, True)
    assert (second["hydra"], second["omegaconf"]) == (False, False)
    assert second["hash"] == first["hash"] == fresh.config_hash() and second["data"] == fresh.data
