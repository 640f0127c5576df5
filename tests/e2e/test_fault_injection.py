"""A small eval under injected faults, end to end through the real `lab` and `doit` commands.

Each fault must end in one line naming the place, the documented exit code,
no traceback, and records on disk that equal the published report
(docs/faults.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.lab_process import command_env, run_cmd, run_script, start_script
from tests.helpers.schemas import assert_jsonl_valid, assert_valid

pytestmark = pytest.mark.slow

ANSWER = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "I could not do it."}}],
          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class Stub:
    """A loopback OpenAI-compatible endpoint that refuses (HTTP 503) until ``up`` is set."""

    def __init__(self, server: LocalHTTPServer) -> None:
        self.server = server
        self.up = threading.Event()
        server.handler = self.answer

    def answer(self, request: Request, response: Response) -> None:
        if self.up.is_set():
            response.send_json(200, ANSWER)
        else:
            response.send_json(503, {"error": {"message": "service unavailable"}})

    @property
    def calls(self) -> int:
        return len(self.server.requests)


@pytest.fixture
def stub() -> Iterator[Stub]:
    with LocalHTTPServer() as server:
        yield Stub(server)
        assert not server.errors


def live_args(stub: Stub, *more: str) -> list[str]:
    return ["suite=smoke-coding", "provider=openai", "preflight=false", f"provider.base_url={stub.server.url}/v1",
            "provider.stream=false", "provider.max_retries=0", "provider.api_key_env=LAB_TEST_KEY",
            "tasks=[rename-symbol]", "k=2", *more]


def run_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = command_env()
    env.update(LAB_DATA_DIR=str(data_dir), **extra)
    return env


def lab(args: list[str], data_dir: Path, exe: str = "lab", **extra: str) -> subprocess.CompletedProcess[str]:
    return run_script([exe, "run" if exe == "lab" else "eval", *args], env=run_env(data_dir, **extra))


def record_files(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("*/*/runs/*/*.json"))


def assert_report_matches_records(data_dir: Path) -> dict[str, object]:
    """The published report and runs.jsonl hold exactly the records on disk (schemas checked)."""
    report_dir = next(data_dir.glob("*/*/reports/*"))
    report = json.loads((report_dir / "report.json").read_text())
    assert_valid("report", report, str(report_dir))
    assert_jsonl_valid("run-record", report_dir / "runs.jsonl")
    on_disk = sorted((json.loads(p.read_text()) for p in record_files(data_dir)),
                     key=lambda r: (r["taskId"], r["repetition"]))
    published = sorted((json.loads(line) for line in (report_dir / "runs.jsonl").read_text().splitlines()),
                       key=lambda r: (r["taskId"], r["repetition"]))
    assert [(r["taskId"], r["repetition"], r["status"], r["startedAt"]) for r in published] == \
        [(r["taskId"], r["repetition"], r["status"], r["startedAt"]) for r in on_disk]
    return dict(report)


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    # The reaper's notice is about runs other lab processes left in the shared TMPDIR (tests run
    # in parallel, some killed on purpose): it is not this command's message.
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and "reaped what an earlier lab left" not in line]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# 1. A run that failed for infrastructure reasons is not a result: the next command runs it again.

def test_missing_credentials_then_refused_runs_execute_again_once_the_provider_answers(tmp_path: Path,
                                                                                        stub: Stub) -> None:
    # No key: nothing is called. With the key, the refused runs are errors; once the provider answers, the
    # same command runs them again, and then they are up to date.
    missing = lab(live_args(stub), tmp_path)
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert stub.calls == 0
    assert "LAB_TEST_KEY" in missing.stdout

    first = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert first.returncode == 1, first.stdout + first.stderr  # infrastructure errors: exit 1
    assert stub.calls == 2
    assert [json.loads(p.read_text())["status"] for p in record_files(tmp_path)] == ["error", "error"]

    stub.up.set()
    second = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "up to date" not in second.stdout
    assert stub.calls == 4
    report = assert_report_matches_records(tmp_path)
    assert report["summary"]["errors"] == 0  # type: ignore[index]
    assert [r["status"] for r in report["runs"]] == ["fail", "fail"]  # type: ignore[index]

    third = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert "2 run(s) up to date" in third.stdout
    assert stub.calls == 4


# 2. doit's own parallel flag runs the runs in threads; its process pool is refused in one line.

def test_doit_n_2_runs_in_threads_and_finishes(tmp_path: Path) -> None:
    result = run_cmd(["doit", "-n", "2", "eval", "suite=core", "mode=replay", "force=true"], tmp_path,
                     timeout_s=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "pickle" not in result.stderr
    assert len(assert_report_matches_records(tmp_path)["runs"]) == 5  # type: ignore[arg-type]


PROCESS_POOL_FLAGS = [["-P", "process"], ["--parallel-type=process"], ["-Pprocess"], ["--parallel-type", "process"]]


def test_doit_process_pool_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # One real `doit` process; every spelling of the flag in-process, where dodo.py reads doit's command line.
    from lab.build.cmdline import doit_config

    result = run_cmd(["doit", "-n", "2", "-P", "process", "eval", "suite=core", "mode=replay"], tmp_path, timeout_s=60)
    assert_one_line(result, 1, "jobs=N", "-n N")
    assert not record_files(tmp_path)
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "in-process"))
    for flags in PROCESS_POOL_FLAGS:
        monkeypatch.setattr("sys.argv", ["doit", "-n", "2", *flags, "eval", "suite=core", "mode=replay"])
        with pytest.raises(SystemExit) as exited:
            doit_config()
        assert exited.value.code == 1, flags
        err = capsys.readouterr().err
        assert_one_line(subprocess.CompletedProcess([], 1, "", err), 1, "jobs=N", "-n N")
    assert not (tmp_path / "in-process").exists()  # refused before the data dir is even made


# 5. Faults of the disk and of the data directory: one line, exit 1, under `lab` and `doit`.

def data_dir_cases(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    return {"file": a_file, "under-a-file": a_file / "runs", "proc": Path("/proc/nope")}


@pytest.mark.parametrize(("exe", "case"), [("lab", "under-a-file"), ("doit", "proc")])
def test_unusable_data_dir_is_one_line_and_exit_1(tmp_path: Path, exe: str, case: str) -> None:
    # One real process under each command; every case under both commands in-process below.
    data = data_dir_cases(tmp_path)[case]
    result = lab(["suite=core", "mode=replay"], data, exe=exe)
    assert_one_line(result, 1, f"data dir {data}")


@pytest.mark.parametrize("case", ["file", "under-a-file", "proc"])
def test_unusable_data_dir_is_one_line_and_exit_1_in_process(tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """What `lab run` and `doit eval` (dodo.py's doit_config) print for each unusable data dir, in-process."""
    from lab.build.cmdline import doit_config
    from lab.cli import main

    data = data_dir_cases(tmp_path)[case]
    monkeypatch.setenv("LAB_DATA_DIR", str(data))
    under_lab = main(["run", "suite=core", "mode=replay"])
    assert_one_line(subprocess.CompletedProcess([], under_lab, "", capsys.readouterr().err), 1, f"data dir {data}")
    monkeypatch.setattr("sys.argv", ["doit", "eval", "suite=core", "mode=replay"])
    with pytest.raises(SystemExit) as exited:
        doit_config()
    assert_one_line(subprocess.CompletedProcess([], exited.value.code, "", capsys.readouterr().err), 1,
                    f"doit: data dir {data}")


def test_unusable_data_dir_under_a_multirun_is_one_line(tmp_path: Path) -> None:
    data = data_dir_cases(tmp_path)["file"]
    result = lab(["-m", "suite=core", "mode=replay", "k=1,2"], data)
    assert_one_line(result, 1, f"data dir {data}")


def can_mount() -> str | None:
    """None when this test may mount in a private namespace (``unshare -m``), else why not."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare/mount not installed"
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", "/mnt"],
                           capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else f"cannot mount in a private namespace: {probe.stderr.strip()}"


MOUNT_SKIP = can_mount()


def in_namespace(script: str, data: Path, exe: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (mount commands) then the command, in a private mount namespace."""
    return run_script([exe, "run" if exe == "lab" else "eval", *args], env=run_env(data), mounts=script)


@pytest.mark.skipif(MOUNT_SKIP is not None, reason=str(MOUNT_SKIP))
@pytest.mark.parametrize("exe", ["lab", "doit"])
def test_read_only_data_dir_is_one_line_and_exit_1(tmp_path: Path, exe: str) -> None:
    data = tmp_path / "ro"
    data.mkdir()
    result = in_namespace(f"mount --bind {data} {data} && mount -o remount,bind,ro {data}", data, exe,
                          "suite=core", "mode=replay")
    assert_one_line(result, 1, f"data dir {data}", "read-only")


@pytest.mark.skipif(MOUNT_SKIP is not None, reason=str(MOUNT_SKIP))
@pytest.mark.parametrize("exe", ["lab", "doit"])
def test_full_disk_mid_eval_is_one_line_exit_1_and_resumes(tmp_path: Path, exe: str) -> None:
    mount = tmp_path / "disk"
    mount.mkdir()
    data = mount / "runs"
    # 100 KiB hold a few run records of smoke-coding but not the whole eval and its report.
    result = in_namespace(f"mount -t tmpfs -o size=100k tmpfs {mount}", data, exe,
                          "suite=smoke-coding", "mode=replay")
    line = assert_one_line(result, 1, f"data dir {data}", "No space left on device")
    assert "warning" not in line
    if exe != "lab":  # the eval on a disk with room is the same code under either command
        return
    # the namespace (and its tmpfs) is gone; nothing half-written was ever visible there, and the
    # same command on a disk with room completes
    again = lab(["suite=smoke-coding", "mode=replay"], tmp_path / "roomy", exe=exe)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(assert_report_matches_records(tmp_path / "roomy")["runs"]) == 7  # type: ignore[arg-type]


def test_corrupted_dependency_db_is_rebuilt_with_one_warning(tmp_path: Path) -> None:
    # One store, corrupted three ways in turn (text, zeros, an SQLite header over bad pages) under both
    # commands: each is rebuilt with one warning and every run stays up to date. Two runs: the database
    # is what is checked.
    args = ["suite=core", "mode=replay", "tasks=[edit-file,delete-file]"]
    first = lab(args, tmp_path)
    assert first.returncode == 0, first.stderr
    before = {p: p.stat().st_mtime_ns for p in record_files(tmp_path)}
    for exe, garbage in [("lab", b"garbage\n"), ("doit", b"\x00" * 4096),
                         ("lab", b"SQLite format 3\x00" + b"\xff" * 200)]:
        (tmp_path / ".doit.sqlite").write_bytes(garbage)
        again = lab(args, tmp_path, exe=exe)
        line = assert_one_line(again, 0, "warning:", ".doit.sqlite", "rebuilt")
        assert "corrupt" in line, (exe, garbage)
        assert "2 run(s) up to date" in again.stdout, (exe, garbage)
        assert {p: p.stat().st_mtime_ns for p in record_files(tmp_path)} == before
        assert (tmp_path / ".doit.sqlite.corrupt").read_bytes() == garbage
    third = lab(args, tmp_path, exe="doit")
    assert third.returncode == 0 and not [line for line in third.stderr.splitlines()
                                          if "reaped what an earlier lab left" not in line]
    assert_report_matches_records(tmp_path)


# 4. Two evals on one data dir run each run once; the report equals the records on disk.

class Gate:
    """A stub whose first request waits until the test opens the gate."""

    def __init__(self, server: LocalHTTPServer) -> None:
        self.server = server
        self.first = threading.Event()
        self.open = threading.Event()
        server.handler = self.answer

    def answer(self, request: Request, response: Response) -> None:
        if not self.first.is_set():
            self.first.set()
            self.open.wait(timeout=120)
        response.send_json(200, ANSWER)


def start(args: list[str], data_dir: Path) -> Any:
    """`lab run ARGS` started and left running (a Popen-like object, tests/helpers/lab_process.py)."""
    return start_script(["lab", "run", *args], env=run_env(data_dir, LAB_TEST_KEY="k"))


def test_two_identical_evals_at_once_execute_each_run_once(tmp_path: Path) -> None:
    with LocalHTTPServer() as server:
        gate = Gate(server)
        args = [
            "suite=smoke-coding", "provider=openai", "preflight=false", f"provider.base_url={server.url}/v1",
            "provider.stream=false", "provider.max_retries=0", "provider.api_key_env=LAB_TEST_KEY",
            "tasks=[rename-symbol,fix-default-argument]", "k=3"]
        first = start(args, tmp_path)
        try:
            assert gate.first.wait(timeout=120), "the first eval never called the provider"
            second = start(args, tmp_path)
            assert second.stdout is not None
            for line in second.stdout:  # the second command reaches the run the first one holds
                if "waiting for runs another command" in line:
                    break
            gate.open.set()
            out2, err2 = second.communicate(timeout=300)
            out1, err1 = first.communicate(timeout=300)
        finally:
            gate.open.set()
            first.kill()
        assert first.returncode == 0, out1 + err1
        assert second.returncode == 0, out2 + err2
        assert len(server.requests) == 6  # each of the 2 x 3 runs called the provider once
        assert not server.errors
    assert "Traceback" not in err1 + err2
    assert "run(s) up to date" in out2
    assert len(record_files(tmp_path)) == 6
    report = assert_report_matches_records(tmp_path)
    assert len(report["runs"]) == 6  # type: ignore[arg-type]


def test_two_configurations_at_once_on_one_data_dir_each_run_their_own(tmp_path: Path, stub: Stub) -> None:
    stub.up.set()
    a = start(live_args(stub, "provider.model=model-a"), tmp_path)
    b = start(live_args(stub, "provider.model=model-b"), tmp_path)
    out_a, err_a = a.communicate(timeout=300)
    out_b, err_b = b.communicate(timeout=300)
    assert a.returncode == b.returncode == 0, out_a + err_a + out_b + err_b
    assert stub.calls == 4
    assert sorted(r.json()["model"] for r in stub.server.requests) == ["model-a"] * 2 + ["model-b"] * 2
    assert len(list(tmp_path.glob("*/*/reports/*/report.json"))) == 2


def test_a_provider_repeating_100_continue_ends_the_run_as_an_error_at_its_deadline(tmp_path: Path) -> None:
    """Once hung the built-in agent until killed from outside; the header trickle is the same kind
    (tests/providers/test_header_deadline.py holds both to the deadline in-process)."""
    from tests.helpers.raw_server import raw_server, trickle

    with raw_server(trickle(0.05, forever_continue=True)) as url:
        args = ["suite=smoke-coding", "provider=openai", "preflight=false", f"provider.base_url={url}",
                "provider.stream=false", "provider.max_retries=0", "provider.api_key_env=LAB_TEST_KEY",
                "provider.timeout_s=1", "tasks=[rename-symbol]", "k=1"]
        result = lab(args, tmp_path, LAB_TEST_KEY="sk-test")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    [record] = [json.loads(p.read_text()) for p in record_files(tmp_path)]
    assert record["status"] == "error"
    assert record["error"]["cause"] == "timeout" and "no status line and headers within" in record["error"]["message"]
