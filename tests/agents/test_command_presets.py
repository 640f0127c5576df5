"""Command-agent presets: validation, rendering, claims, installation (with a real stand-in installer)."""

from __future__ import annotations

import copy
import stat
import string
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.agents.command import PLACEHOLDERS, CommandPreset, check_installed, preset_problems, render
from lab.agents.install import agent_state, install_agent
from lab.config.compose import EffectiveConfig
from lab.errors import ConfigError
from tests.helpers.composed import composed

PRESETS = ["reference", "codex", "aider", "mini-swe-agent"]


def agent_data(name: str, *extra: str) -> dict:
    return composed(f"agent={name}", "provider=scripted", *extra).data["agent"]


@pytest.mark.parametrize("name", PRESETS)
def test_every_shipped_preset_is_valid_and_hashes_its_name_and_version(name: str) -> None:
    config = composed(f"agent={name}", "provider=scripted")
    preset = CommandPreset.from_config(config.data["agent"])
    assert preset.name == name and preset.version
    if name == "reference":  # the override as a user gives it, once; for the others the same value in the data
        bumped = composed(f"agent={name}", "provider=scripted", "agent.version=9.9.9")
        assert bumped.data["agent"]["version"] == "9.9.9"
    else:
        data = copy.deepcopy(config.data)
        data["agent"]["version"] = "9.9.9"
        bumped = EffectiveConfig(data=data, variant=config.variant, overrides=config.overrides)
    assert config.config_hash() != bumped.config_hash()


def test_the_reference_preset_renders_every_placeholder() -> None:
    agent = agent_data("reference")
    agent["api"] = "responses"  # as agent.api=responses sets it
    preset = CommandPreset.from_config(agent)
    argv = render(preset.argv, {p: f"<{p}>" for p in PLACEHOLDERS} | {"api": "responses"})
    assert argv[argv.index("--api") + 1] == "responses" and "<prompt_file>" in argv and "<model>" in argv


def test_codex_keeps_literal_braces_of_its_provider_table() -> None:
    preset = CommandPreset.from_config(agent_data("codex"))
    argv = render(preset.argv, {p: "" for p in PLACEHOLDERS} | {"base_url": "http://127.0.0.1:1/v1"})
    assert 'model_providers.lab={name="lab",base_url="http://127.0.0.1:1/v1",env_key="OPENAI_API_KEY",' \
           'wire_api="responses"}' in argv


@given(st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12))
def test_any_unknown_placeholder_is_named(name: str) -> None:
    agent = agent_data("reference")  # composed once (tests/helpers/composed.py); a copy of the shared data
    agent["command"]["argv"] = ["prog", f"--x={{{name}}}"]
    problems = preset_problems(agent)
    assert (name in PLACEHOLDERS) == (not problems)
    if problems:
        assert problems == [f"config: agent.command.argv[1]: unknown placeholder {{{name}}} in "
                            f"'--x={{{name}}}' (known: " + ", ".join("{" + p + "}" for p in PLACEHOLDERS) + ")"]


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("env", {"OPENAI_API_KEY": "x"}, "agent.command.env.OPENAI_API_KEY: set by the lab"),
    ("claim", "stdout_pattern", "claim stdout_pattern needs a pattern"),
    ("argv", [], "has no command to run"),
    ("argv", ["a", "{"], "agent.command.argv[1]: bad template"),
])
def test_preset_mistakes_are_one_line_each(key: str, value: object, expected: str) -> None:
    agent = agent_data("reference")
    agent["command"][key] = value
    problems = preset_problems(agent)
    assert len(problems) == 1 and expected in problems[0]


@pytest.mark.parametrize(("claim", "code", "stdout", "claimed"), [
    ("exit_zero", 0, "", True), ("exit_zero", 1, "", False), ("exit_zero", None, "", False),
    ("never", 0, "", False), ("stdout_pattern", 0, "all DONE", True), ("stdout_pattern", 0, "gave up", False),
])
def test_claims(claim: str, code: int | None, stdout: str, claimed: bool) -> None:
    agent = agent_data("reference")
    agent["command"].update(claim=claim, claim_pattern="DONE")  # as agent.command.claim=… claim_pattern=DONE set them
    assert CommandPreset.from_config(agent).claims_success(code, stdout) is claimed


def fake_pypi_preset(tmp_path: Path) -> CommandPreset:
    agent = agent_data("mini-swe-agent")
    agent["command"]["argv"] = ["fake-agent", "{prompt}"]
    return CommandPreset.from_config(agent)


def test_install_is_pinned_reused_and_sized(tmp_path: Path) -> None:
    preset = fake_pypi_preset(tmp_path)
    steps: list[list[str]] = []

    def runner(argv: list[str]) -> int:  # stands in for venv + pip: makes the program they would install
        steps.append(argv)
        if "venv" in argv:
            bin_dir = Path(argv[-1]) / "bin"
            bin_dir.mkdir(parents=True)
            program = bin_dir / "fake-agent"
            program.write_text(f"#!{sys.executable}\n")
            program.chmod(program.stat().st_mode | stat.S_IXUSR)
        return 0

    with pytest.raises(ConfigError, match=r"agent mini-swe-agent: not installed \(run: lab agents install"):
        check_installed(preset, tmp_path)
    state = install_agent(preset, tmp_path, run=runner, say=lambda _: None)
    assert state.installed == "2.4.6" and state.size_bytes > 0
    assert steps[1][-1] == "mini-swe-agent==2.4.6" and steps[0][0] == "/usr/bin/python3"
    check_installed(preset, tmp_path)
    install_agent(preset, tmp_path, run=runner, say=lambda _: None)
    assert len(steps) == 2  # reused: nothing ran again
    assert agent_state(preset, tmp_path).installed == "2.4.6"


def test_a_failed_install_step_is_one_line_and_leaves_it_not_installed(tmp_path: Path) -> None:
    preset = fake_pypi_preset(tmp_path)
    with pytest.raises(ConfigError, match=r"failed with exit 3"):
        install_agent(preset, tmp_path, run=lambda argv: 3, say=lambda _: None)
    assert agent_state(preset, tmp_path).installed is None


def test_lab_agents_list_and_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: `lab agents` is the handler `lab` dispatches to (its exit code is the return value).
    from lab.cli import COMMANDS
    from lab.cli.agents import agents

    assert COMMANDS["agents"] == "lab.cli.agents:agents"
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert agents(["list"]) == 0
    listed = capsys.readouterr()
    rows = {line.split()[0]: line for line in listed.out.splitlines()[2:]}
    assert set(rows) == set(PRESETS) and "not installed" in rows["aider"] and "(lab)" in rows["reference"]
    assert agents(["install", "nope"]) == 1
    bad = capsys.readouterr()
    assert bad.out == "" and bad.err.startswith("lab agents: no preset 'nope'") and len(bad.err.splitlines()) == 1
