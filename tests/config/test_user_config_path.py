"""User presets outside the installation: LAB_CONFIG_PATH directories searched by Hydra."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.cli import config_flags
from lab.config.cache import compose_cached
from lab.config.compose import compose_config
from lab.config.overrides import describe_compose_error
from lab.config.searchpath import searchpath_overrides, user_config_dirs
from lab.errors import ConfigError
from lab.paths import CONF_DIR
from tests.helpers.lab_process import command_env, run_script

OLD_S = 1_000_000_000


def _user_dir(root: Path) -> Path:
    """A user config directory: an agent, a provider, a suite and a variant preset."""
    (root / "agent").mkdir(parents=True)
    text = (CONF_DIR / "agent" / "builtin.yaml").read_text()
    (root / "agent" / "my-agent.yaml").write_text(text.replace("name: builtin", "name: my-agent")
                                                  .replace("max_output_tokens: 4096", "max_output_tokens: 1234"))
    (root / "provider").mkdir()
    (root / "provider" / "local.yaml").write_text(
        "name: openai\nmodel: local-model\nbase_url: http://127.0.0.1:9/v1\napi_key_env: OPENAI_API_KEY\n")
    (root / "suite").mkdir()
    (root / "suite" / "mine.yaml").write_text(f"id: core\npath: {CONF_DIR.parent / 'suites' / 'core'}\nk: 2\n")
    (root / "variant").mkdir()
    (root / "variant" / "tiny.yaml").write_text("# @package _global_\nagent:\n  max_output_tokens: 777\n")
    return root


@pytest.fixture
def user_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = _user_dir(tmp_path / "presets")
    monkeypatch.setenv("LAB_CONFIG_PATH", str(root))
    return root


def test_user_presets_compose_like_bundled_ones(user_conf: Path) -> None:
    config = compose_config(["agent=my-agent", "provider=local", "suite=mine", "variant=tiny"])
    assert config.data["agent"]["name"] == "my-agent" and config.data["agent"]["max_output_tokens"] == 777
    assert config.data["provider"]["model"] == "local-model"
    assert (config.data["suite"]["id"], config.k) == ("core", 2)
    assert config.variant == "tiny"


def test_a_user_variant_is_held_to_the_variant_rule(user_conf: Path) -> None:
    (user_conf / "variant" / "bad.yaml").write_text("# @package _global_\nk: 3\n")
    with pytest.raises(ConfigError, match=r"variant bad \(.*presets/variant/bad\.yaml\): k: not a measured-config key"):
        compose_config(["variant=bad"])


def test_a_missing_option_names_the_user_presets_and_the_directory(user_conf: Path) -> None:
    with pytest.raises(ConfigError) as err:
        compose_config(["agent=nope"])
    assert str(err.value) == ("config: no option 'nope' in group 'agent' (available: aider, builtin, codex, "
                              f"mini-swe-agent, reference, my-agent; LAB_CONFIG_PATH adds {user_conf})")


def test_a_preset_with_a_bundled_name_is_refused_naming_both(user_conf: Path) -> None:
    shutil.copy(CONF_DIR / "agent" / "builtin.yaml", user_conf / "agent" / "builtin.yaml")
    with pytest.raises(ConfigError) as err:
        compose_config([])
    assert str(err.value) == (f"LAB_CONFIG_PATH: {user_conf}/agent/builtin.yaml: a bundled preset has this name "
                              f"({CONF_DIR}/agent/builtin.yaml), and Hydra would use that one; rename yours "
                              "(e.g. agent=my-builtin)")
    assert f"  refused: {err.value}" in config_flags.info_text([]).splitlines()  # --info shows it too


def test_an_entry_that_is_not_a_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^LAB_CONFIG_PATH: {tmp_path}/nope is not a directory"):
        user_config_dirs({"LAB_CONFIG_PATH": f"{tmp_path}{os.pathsep}{tmp_path}/nope"})
    assert user_config_dirs({"LAB_CONFIG_PATH": f"{tmp_path}{os.pathsep}{os.pathsep}{tmp_path}"}) == [tmp_path]


def test_the_users_own_searchpath_is_kept_after(tmp_path: Path) -> None:
    assert searchpath_overrides([tmp_path], ["k=1", "hydra.searchpath=[pkg://x,'file:///a b']"]) == [
        f"hydra.searchpath=['file://{tmp_path}','pkg://x','file:///a b']", "k=1"]
    assert searchpath_overrides([], ["k=1"]) == ["k=1"]


def test_help_info_and_completion_list_user_presets_and_the_sandbox_group(user_conf: Path) -> None:
    help_text = config_flags.help_text("run")
    rows = {line.split()[0]: line for line in help_text.splitlines() if line[:1].isalpha() and "  " in line}
    assert rows["agent"].endswith("reference, my-agent") and rows["sandbox"].split(None, 1)[1] == (
        "auto (default), bwrap, none")
    info = config_flags.info_text([])
    assert (f"user config: {user_conf} (LAB_CONFIG_PATH; suite: mine; provider: local; agent: my-agent; "
            "variant: tiny)") in info.splitlines()
    words = config_flags.completion_words()
    assert {"agent=my-agent", "suite=mine", "sandbox=bwrap", "sandbox=none", "variant=tiny"} <= set(words)


def _age(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.utime(path, (OLD_S, OLD_S))


def test_the_remembered_config_follows_the_user_presets(user_conf: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _age(user_conf)
    cache = tmp_path / "cache"
    first = compose_cached(["agent=my-agent"], cache=cache)
    assert list((cache / "config").glob("*.json")), "remembered"
    assert compose_cached(["agent=my-agent"], cache=cache).data == first.data
    preset = user_conf / "agent" / "my-agent.yaml"
    preset.write_text(preset.read_text().replace("max_output_tokens: 1234", "max_output_tokens: 2345"))
    _age(user_conf)
    os.utime(preset, (OLD_S + 5, OLD_S + 5))  # edited: a new stamp, settled long ago
    assert compose_cached(["agent=my-agent"], cache=cache).data["agent"]["max_output_tokens"] == 2345
    other = _user_dir(tmp_path / "other")
    (other / "agent" / "my-agent.yaml").write_text(preset.read_text().replace("2345", "3456"))
    _age(other)
    monkeypatch.setenv("LAB_CONFIG_PATH", str(other))
    assert compose_cached(["agent=my-agent"], cache=cache).data["agent"]["max_output_tokens"] == 3456


@pytest.mark.slow
def test_an_installed_lab_runs_a_user_agent_preset_from_anywhere(tmp_path: Path) -> None:

    presets = _user_dir(tmp_path / "presets")
    env = command_env()
    env.update(LAB_CONFIG_PATH=str(presets), LAB_DATA_DIR=str(tmp_path / "runs"))
    result = run_script(["lab", "run", "agent=my-agent", "provider=scripted", "suite=smoke-coding",
                         "tasks=[rename-symbol]", "k=1", "sandbox=none", "json=true"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    config = json.loads(next((tmp_path / "runs").glob("smoke-coding/*/config.json")).read_text())
    assert config["config"]["agent"]["name"] == "my-agent", config
    assert report["summary"]["judged"] == 1


def test_a_broken_or_unknown_key_in_a_preset_names_its_file(user_conf: Path) -> None:
    (user_conf / "agent" / "broken.yaml").write_text("name: broken\nallow: [read, write\n")
    with pytest.raises(ConfigError) as err:
        compose_config(["agent=broken"])
    assert str(err.value) == (f"config: {user_conf}/agent/broken.yaml: line 3, column 1: expected ',' or ']', but got "
                              "'<stream end>' (while parsing a flow sequence, from line 2, column 8)")
    (user_conf / "agent" / "extra.yaml").write_text("name: extra\nbogus_key: 1\n")
    with pytest.raises(ConfigError) as err:
        compose_config(["agent=extra"])
    assert str(err.value) == (f"config: unknown key 'agent.bogus_key' in {user_conf}/agent/extra.yaml "
                              "(see conf/config.yaml for valid keys)")
    (user_conf / "agent" / "listy.yaml").write_text("- a\n- b\n")  # YAML, but not a mapping of keys
    with pytest.raises(ConfigError) as err:
        compose_config(["agent=listy"])
    assert str(err.value) == ("config: bad override 'agent=listy': In 'agent/listy': ValidationError raised while "
                              "composing config: Invalid type assigned: list is not a subclass of AgentConf. "
                              "value: ['a', 'b']")
    with pytest.raises(ConfigError) as err:  # set by an override, not by the preset: no file named
        compose_config(["+agent.bogus_key=1"])
    assert str(err.value) == "config: unknown key 'agent.bogus_key' (see conf/config.yaml for valid keys)"


@settings(max_examples=40)
@given(st.text(alphabet="ab:-[]{}\"' \t\n#&*!|>%@`,", max_size=40))
def test_any_yaml_syntax_error_is_one_line_naming_the_file_line_and_column(text: str) -> None:
    import yaml

    try:
        yaml.safe_load(io.StringIO(text))
    except yaml.MarkedYAMLError as exc:
        exc.problem_mark.name = "/u/agent/x.yaml"  # type: ignore[union-attr]
        line = describe_compose_error(exc, ["agent=x"])
        assert re.fullmatch(r"config: /u/agent/x\.yaml: line \d+, column \d+: [^\n]+", line), line
    except yaml.YAMLError:
        pass
