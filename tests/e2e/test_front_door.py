"""The first commands a new user types: `doit eval` without a key, against a local server, `lab --help` & co."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from lab.report.build import SCRIPTED_NOTE
from lab.schemas import load_schema
from tests.helpers.http_server import LocalHTTPServer, Request, Response, closed_port_url
from tests.helpers.lab_process import ROOT, command_env, run_cmd, run_script

pytestmark = pytest.mark.slow


def records_in(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("*/*/runs/*/*.json"))


def report_dir_of(stdout: str) -> Path:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("report: "))
    return Path(line.removeprefix("report: ")).parent


def run_env(argv: list[str], data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Like run_cmd, with extra environment variables (the provider's)."""
    full = command_env()
    full.update(env, LAB_DATA_DIR=str(data_dir))
    return run_script(argv, env=full)


def test_eval_without_a_key_is_one_line_naming_three_ways_and_runs_nothing(tmp_path: Path) -> None:
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "k=5"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "OPENAI_API_KEY is not set" in lines[0]
    assert all(way in lines[0] for way in ("mode=replay", "provider=scripted", "OPENAI_BASE_URL="))
    assert records_in(tmp_path) == []


def test_unreachable_base_url_is_one_line_before_any_run(tmp_path: Path) -> None:
    url = closed_port_url()
    result = run_env(["lab", "run", "suite=smoke-coding", "k=1"], tmp_path,
                     OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-dummy-for-tests")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"cannot reach {url.rstrip('/')}/models" in result.stderr and "preflight=false" in result.stderr
    assert "sk-dummy-for-tests" not in result.stderr
    assert records_in(tmp_path) == []


def _stub(request: Request, response: Response) -> None:
    """An OpenAI-compatible server that answers every chat completion with plain text."""
    if request.method == "GET" and request.path.endswith("/models"):
        response.send_json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
        return
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "stub-model",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": "I cannot do that."},
                          "finish_reason": "stop"}]}
    usage = {"id": "c1", "object": "chat.completion.chunk", "model": "stub-model", "choices": [],
             "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in (chunk, usage)) + "data: [DONE]\n\n"
    response.send(200, body.encode(), content_type="text/event-stream")


def test_local_openai_compatible_server_gives_a_live_result(tmp_path: Path) -> None:
    with LocalHTTPServer() as server:
        server.handler = _stub
        result = run_env(["doit", "eval", "suite=smoke-coding", "k=2", "tasks=[rename-symbol]",
                          "provider.model=stub-model"], tmp_path, OPENAI_BASE_URL=server.url + "/v1",
                         OPENAI_API_KEY="dummy")
        requests = list(server.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((report_dir_of(result.stdout) / "report.json").read_text())
    jsonschema.validate(report, load_schema("report"))
    assert (report["header"]["provider"], report["header"]["mode"]) == ("openai", "live")
    assert report["summary"]["judged"] == 2 and "note" not in report["header"]
    assert [r.path for r in requests if r.method == "GET"] == ["/v1/models"]
    assert sum(r.path == "/v1/chat/completions" for r in requests) == 2
    assert all(r.headers.get("authorization") == "Bearer dummy" for r in requests)
    assert "runs: 2 of 2 planned runs attempted" in result.stdout


def test_a_model_the_local_server_does_not_list_stops_before_any_run(tmp_path: Path) -> None:
    with LocalHTTPServer() as server:
        server.handler = _stub
        result = run_env(["lab", "run", "suite=smoke-coding", "k=1", "sandbox=none"], tmp_path,
                         OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="dummy")
        requests = list(server.requests)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [
        f"provider openai: model 'gpt-4.1-mini' is not among the models {server.url}/v1/models lists (stub-model); "
        "set provider.model=<one of them> (or preflight=false to run anyway)"]
    assert [(r.method, r.path) for r in requests] == [("GET", "/v1/models")]
    assert records_in(tmp_path) == []


def test_scripted_result_says_what_it_measures_everywhere(tmp_path: Path) -> None:
    result = run_cmd(["lab", "run", "suite=core", "provider=scripted", "k=1", "tasks=[edit-file]"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report_dir = report_dir_of(result.stdout)
    assert result.stdout.count(SCRIPTED_NOTE) == 2  # the header before the runs and the closing table
    assert SCRIPTED_NOTE in (report_dir / "report.md").read_text()
    assert SCRIPTED_NOTE in (report_dir / "index.html").read_text()
    assert json.loads((report_dir / "report.json").read_text())["header"]["note"] == SCRIPTED_NOTE
    assert f"results in {tmp_path}" in result.stdout


def test_doit_clean_removes_records_and_reports_and_forget_makes_runs_out_of_date(tmp_path: Path) -> None:
    argv = ["suite=core", "mode=replay", "tasks=[edit-file,delete-file]"]
    first = run_cmd(["doit", "eval", *argv], tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    report_dir = report_dir_of(first.stdout)
    assert len(records_in(tmp_path)) == 2 and report_dir.is_dir()
    cleaned = run_cmd(["doit", "clean", "eval", *argv], tmp_path)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert records_in(tmp_path) == [] and not report_dir.exists()
    again = run_cmd(["doit", "eval", *argv], tmp_path)
    assert "0 run(s) up to date" not in again.stdout and again.stdout.count("  pass ") == 2
    forgot = run_cmd(["doit", "forget", "eval", *argv], tmp_path)
    assert forgot.returncode == 0, forgot.stderr
    after_forget = run_cmd(["doit", "eval", *argv], tmp_path)
    assert after_forget.stdout.count("  pass ") == 2, after_forget.stdout
    up_to_date = run_cmd(["doit", "eval", *argv], tmp_path)
    assert "2 run(s) up to date" in up_to_date.stdout and "  pass " not in up_to_date.stdout


def test_make_forwards_its_command_line_variables_as_overrides() -> None:
    result = subprocess.run(["make", "-n", "-C", str(ROOT), "eval", "k=3", "seed=7"], capture_output=True,
                            text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    assert any(line.endswith("doit eval suite=smoke-coding mode=replay k=3 seed=7") or
               line.endswith("doit eval suite=smoke-coding mode=replay seed=7 k=3")
               for line in result.stdout.splitlines()), result.stdout
    run = subprocess.run(["make", "-n", "-C", str(ROOT), "run", "suite=core"], capture_output=True, text=True,
                         check=False, timeout=60)
    assert any(line.endswith("lab run suite=core") for line in run.stdout.splitlines()), run.stdout


def _variants(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cmd(["lab", "variants", "suite=core", "variant=baseline,no-compaction", "provider=scripted", "k=1",
                    "tasks=[edit-file]", *extra], tmp_path)


def test_variants_execute_both_sides_and_reuse_only_an_identical_variants_command(tmp_path: Path) -> None:
    earlier = run_cmd(["lab", "run", "suite=core", "provider=scripted", "k=1", "tasks=[edit-file]"], tmp_path)
    assert earlier.returncode == 0, earlier.stderr
    first = _variants(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "runs: 2 executed now, 0 up to date" in first.stdout
    second = _variants(tmp_path)
    assert "runs: 0 executed now, 2 up to date" in second.stdout
    other_jobs = _variants(tmp_path, "jobs=2")
    assert "runs: 2 executed now, 0 up to date" in other_jobs.stdout


@pytest.mark.parametrize("command", ["run", "record", "ci", "variants", "list", "gate", "gen-stress", "compare",
                                     "admit", "export", "tools", "agents", "plan"])
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the help is text the entry point prints (`lab run -h` below runs the real process).
    from lab.cli import main

    assert main([command, "--help"]) == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith(f"usage: lab {command}")
    # Written for users: a description, not a developer's note, a citation of the
    # unshipped specification or reST markup.
    body = stdout.split("\n\n", 1)[1]
    assert len(body) > 40, stdout
    for internal in ("SPEC ", "module docstring", "Dispatch", ":mod:", "``"):
        assert internal not in stdout, stdout


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_ci_help_describes_the_keys_ci_takes_and_no_others(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    from lab.build.ci import CI_KEYS
    from lab.cli import main

    assert main(["ci", flag]) == 0
    stdout = capsys.readouterr().out
    usage = stdout.splitlines()[0]
    assert re.findall(r"\[(\w+)=", usage) == ["suite", "suite_dir", "cassette_dir", "out", "jobs", "json", "progress",
                                               "yes"]
    described = re.findall(r"^  (\w+)=\S+ +\S.*$", stdout, re.MULTILINE)  # one line each: KEY=VALUE, what it does
    assert sorted(described) == sorted(CI_KEYS) == sorted(set(described))
    # Not the eval's help: ci refuses the config groups and keys (`ci: unknown key 'k'`).
    assert "Config groups" not in stdout and "Top-level keys" not in stdout and "\n  k=" not in stdout
    assert main(["ci", "k=2"]) == 1
    assert "ci: unknown key 'k'" in capsys.readouterr().err


def test_the_overview_is_for_users(tmp_path: Path) -> None:
    result = run_cmd(["lab", "--help"], tmp_path)
    assert result.returncode == 0 and "lab compare BASE CAND" in result.stdout
    assert "For developers" not in result.stdout and "import" not in result.stdout
    assert "``" not in result.stdout  # reST markup: a terminal shows it as it is


def test_run_help_lists_groups_options_and_keys_with_defaults(tmp_path: Path) -> None:
    result = run_cmd(["lab", "run", "-h"], tmp_path)
    assert result.returncode == 0
    for expected in ("provider  openai (default), scripted", "mode      live (default), record, replay",
                     "preflight", "cassette_dir"):
        assert expected in result.stdout


def test_cfg_job_prints_the_composed_config_and_its_hash_and_runs_nothing(tmp_path: Path) -> None:
    from lab.config.compose import compose_config

    result = run_cmd(["lab", "run", "--cfg", "job", "suite=core", "k=3"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\nk: 3\n" in result.stdout and "id: core" in result.stdout
    expected = compose_config(["suite=core", "k=3"]).config_hash()
    assert f"# effective-config hash: {expected}" in result.stdout
    assert records_in(tmp_path) == []
    bad = run_cmd(["lab", "run", "--cfg", "job", "kk=3"], tmp_path)
    assert bad.returncode == 1 and "kk" in bad.stderr and "Traceback" not in bad.stderr


def test_version_info_and_python_dash_m(tmp_path: Path) -> None:
    from importlib.metadata import version

    assert run_cmd(["lab", "--version"], tmp_path).stdout.strip() == f"lab (reliability-lab) {version('reliability-lab')}"
    # lab/__main__.py, what `python -m lab` runs, forked (tests/execute/test_executor_seam.py starts
    # `python -m lab` itself as a fresh interpreter).
    module = run_script([str(ROOT / "lab" / "__main__.py"), "list"], env=os.environ.copy(), cwd=tmp_path, timeout_s=60)
    assert module.returncode == 0 and "smoke-coding" in module.stdout
    info = run_cmd(["lab", "run", "--info"], tmp_path)
    assert info.returncode == 0 and f"results:   {tmp_path}" in info.stdout


def _complete(script: str, line: str) -> list[str]:
    """Run the bash completion function over ``line`` the way bash would, return its candidates."""
    words = line.split(" ")
    program = (f"{script}\nCOMP_LINE='{line}'; COMP_POINT={len(line)}; COMP_WORDS=({line}); "
               f"COMP_CWORD={len(words) - 1}; _lab; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True, timeout=30)
    return out.stdout.split()


def test_bash_completion_offers_commands_groups_options_and_keys(tmp_path: Path) -> None:
    script = run_cmd(["lab", "run", "--shell-completion", "shell=bash"], tmp_path).stdout
    assert "variants" in _complete(script, "lab va")
    assert _complete(script, "lab run provider=scr") == ["scripted"]  # bash replaces the word after '='
    assert "preflight=" in _complete(script, "lab run pre")
    assert "agent.compaction.enabled=" in _complete(script, "lab run agent.compaction.e")
    zsh = run_cmd(["lab", "run", "--shell-completion", "shell=zsh"], tmp_path)
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef lab")
