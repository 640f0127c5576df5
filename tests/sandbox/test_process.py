"""lab.sandbox.process: real child processes, process-group kills, bounded output."""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
from pathlib import Path

import pytest

from lab.errors import ProcessStartError
from lab.sandbox.exitwait import wait_exit
from lab.sandbox.process import ProcessResult, minimal_env, run_process

PY = sys.executable


def _py(code: str, *args: str) -> list[str]:
    """``python -S -c code args``: the children need only the standard library; without ``site`` (the
    virtualenv's .pth hooks) an interpreter starts in a third of the CPU time."""
    return [PY, "-S", "-c", code, *args]


def _wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    """True once ``pid`` has terminated (a zombie awaiting its reaper counts).

    Uses a pidfd, which becomes readable when the process exits: an event, not
    a sleep. Orphaned grandchildren are reaped by init, whenever it likes.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
        return bool(readable)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return minimal_env(tmp_path)


# Spawns a `sleep 30` grandchild, records its pid, then blocks until killed.
_SPAWN_AND_BLOCK = """
import os, signal, subprocess, sys
if sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the grandchild
child = subprocess.Popen(["sleep", "30"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(child.pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    signal.pause()
"""


def test_minimal_env_keeps_only_safe_variables(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("SOME_USER_VAR", "x")
    env = minimal_env(tmp_path, {"EXTRA": "1"})
    assert set(env) == {"PATH", "LANG", "HOME", "PYTHONDONTWRITEBYTECODE", "TMPDIR", "EXTRA"}
    assert env["HOME"] == str(tmp_path)
    assert env["LANG"] == "C.UTF-8"
    assert env["PATH"] == os.environ["PATH"]


def test_captures_stdout_stderr_and_exit_code(tmp_path: Path, env: dict[str, str]) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=10_000, env=env)
    assert isinstance(result, ProcessResult)
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert (result.stdout_bytes, result.stderr_bytes) == (4, 4)
    assert not (result.truncated or result.timed_out or result.cancelled)


def test_child_sees_cwd_and_only_the_given_env(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    code = "import os; print(os.getcwd()); print(sorted(os.environ))"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=10_000,
                         env=minimal_env(tmp_path))
    cwd_line, keys_line = result.stdout.decode().splitlines()
    assert Path(cwd_line).resolve() == tmp_path.resolve()
    assert "OPENAI_API_KEY" not in keys_line


def test_stdin_bytes_are_delivered(tmp_path: Path, env: dict[str, str]) -> None:
    data = bytes(range(256)) * 8192  # 2 MiB: the writer must not deadlock the readers
    code = "import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d[::-1])"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=20_000, env=env,
                         max_output_bytes=len(data), stdin=data)
    assert result.stdout == data[::-1]


def test_stdin_and_stdout_flow_at_once(tmp_path: Path, env: dict[str, str]) -> None:
    # cat writes as it reads: stdin must be fed while stdout is read, from one thread.
    data = os.urandom(3 * 1024 * 1024)
    result = run_process(["cat"], cwd=tmp_path, timeout_ms=20_000, env=env,
                         max_output_bytes=len(data), stdin=data)
    assert result.exit_code == 0 and not result.timed_out
    assert result.stdout == data


@pytest.mark.parametrize("case", ["output", "timeout"])
def test_without_pidfds_a_waiter_thread_reports_the_exit(tmp_path: Path, env: dict[str, str], case: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int) -> int:
        raise OSError("pidfd_open: not supported here")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    if case == "output":
        result = run_process(_py("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"),
                             cwd=tmp_path, timeout_ms=20_000, env=env, stdin=b"ignored")
        assert (result.exit_code, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    else:
        result = run_process(_py("import time; time.sleep(30)"), cwd=tmp_path, timeout_ms=300, env=env)
        assert result.timed_out and result.exit_code is None


def test_large_output_on_both_streams_is_bounded_head_and_tail(
        tmp_path: Path, env: dict[str, str]) -> None:
    code = ("import sys\n"
            "o, e = sys.stdout.buffer, sys.stderr.buffer\n"
            "o.write(b'HEAD'); e.write(b'head')\n"
            "for _ in range(300):\n"
            "    o.write(b'o' * 10000); e.write(b'e' * 10000)\n"
            "o.write(b'TAIL'); e.write(b'tail')\n")
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=20_000, env=env,
                         max_output_bytes=1000)
    assert result.exit_code == 0
    assert result.truncated
    assert (result.stdout_bytes, result.stderr_bytes) == (3_000_008, 3_000_008)
    assert len(result.stdout) == 1000 and len(result.stderr) == 1000
    assert result.stdout.startswith(b"HEADooo") and result.stdout.endswith(b"oooTAIL")
    assert result.stderr.startswith(b"headeee") and result.stderr.endswith(b"eeetail")


def test_output_within_limit_is_not_truncated(tmp_path: Path, env: dict[str, str]) -> None:
    code = "import sys; sys.stdout.buffer.write(b'x' * 1000)"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=10_000, env=env,
                         max_output_bytes=1000)
    assert result.stdout == b"x" * 1000 and not result.truncated


def test_binary_output_is_kept_verbatim(tmp_path: Path, env: dict[str, str]) -> None:
    code = "import sys; sys.stderr.buffer.write(b'\\xff\\xfe ok \\xc3')"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=10_000, env=env)
    assert result.stderr == b"\xff\xfe ok \xc3"


def test_background_process_left_behind_is_killed_on_exit(
        tmp_path: Path, env: dict[str, str]) -> None:
    # The sleep inherits stdout; without the group kill the pipe stays open.
    code = "import subprocess; p = subprocess.Popen(['sleep', '30']); print(p.pid)"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=10_000, env=env)
    assert result.exit_code == 0 and not result.timed_out
    assert result.duration_ms < 5_000
    assert _wait_gone(int(result.stdout))


def test_exit_by_signal_is_a_negative_exit_code(tmp_path: Path, env: dict[str, str]) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=10_000, env=env)
    assert result.exit_code == -9 and not result.timed_out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["obey-term", "ignore-term"])
def test_timeout_kills_the_whole_process_group(tmp_path: Path, env: dict[str, str],
                                               mode: str) -> None:
    pid_file = tmp_path / "grandchild.pid"
    result = run_process(_py(_SPAWN_AND_BLOCK, str(pid_file), mode), cwd=tmp_path,
                         timeout_ms=1500, env=env)
    assert result.timed_out and not result.cancelled
    assert result.exit_code is None
    assert result.duration_ms >= 1500
    grandchild = int(pid_file.read_text())
    assert _wait_gone(grandchild), f"grandchild {grandchild} survived the timeout"
    assert not _alive(grandchild)


def test_cancel_kills_the_whole_process_group(tmp_path: Path, env: dict[str, str]) -> None:
    # The child reports its grandchild's pid over a socket: readiness by event.
    code = ("import signal, socket, subprocess, sys\n"
            "p = subprocess.Popen(['sleep', '30'])\n"
            "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
            "s.sendall(str(p.pid).encode()); s.close()\n"
            "while True: signal.pause()\n")
    cancel = threading.Event()
    results: list[ProcessResult] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(20)
        port = server.getsockname()[1]
        worker = threading.Thread(target=lambda: results.append(run_process(
            _py(code, str(port)), cwd=tmp_path, timeout_ms=60_000, env=env, cancel=cancel)))
        worker.start()
        conn, _ = server.accept()
        with conn:
            conn.settimeout(20)
            grandchild = int(conn.recv(64))
    cancel.set()
    worker.join(timeout=20)
    assert results and results[0].cancelled and not results[0].timed_out
    assert results[0].exit_code is None
    assert _wait_gone(grandchild)


def test_program_not_found_names_it(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(ProcessStartError, match="no-such-program-xyz.*not found"):
        run_process(["no-such-program-xyz"], cwd=tmp_path, timeout_ms=1000, env=env)


def test_program_not_executable_names_it(tmp_path: Path, env: dict[str, str]) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(ProcessStartError, match="script.sh.*permission denied"):
        run_process([str(script)], cwd=tmp_path, timeout_ms=1000, env=env)


def test_missing_cwd_names_program_and_directory(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(ProcessStartError, match="'python3'.*does not exist"):
        run_process(["python3", "-V"], cwd=tmp_path / "gone", timeout_ms=1000, env=env)


def test_empty_argv_cannot_start(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(ProcessStartError, match="argv is empty"):
        run_process([], cwd=tmp_path, timeout_ms=1000, env=env)


def _no_sleeping(seconds: float) -> None:
    raise AssertionError(f"time.sleep({seconds}) called: waits must block on the child, not poll")


@pytest.mark.parametrize("code", ["pass", "import sys; sys.stdout.write('x' * 100000)"])
def test_waiting_for_a_command_never_sleeps(tmp_path: Path, env: dict[str, str], code: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # time.sleep is replaced (not mocked for a value) so that any polling wait fails the test.
    import time

    monkeypatch.setattr(time, "sleep", _no_sleeping)
    result = run_process(_py(code), cwd=tmp_path, timeout_ms=30_000, env=env)
    assert result.exit_code == 0 and not result.timed_out


def test_a_timeout_kill_never_sleeps(tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    # As above: a SIGTERM grace period must be a blocking wait too.
    import time

    monkeypatch.setattr(time, "sleep", _no_sleeping)
    result = run_process(_py("import time; time.sleep(30)"), cwd=tmp_path, timeout_ms=50, env=env)
    assert result.timed_out and result.exit_code is None


def test_wait_exit_reaps_an_exited_child_and_reports_a_timeout_without_sleeping(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import time

    monkeypatch.setattr(time, "sleep", _no_sleeping)  # Popen.wait(timeout=...) would poll with sleeps
    quick = subprocess.Popen(_py("pass"), cwd=tmp_path)
    blocked = subprocess.Popen(_py("import sys; sys.stdin.read()"), cwd=tmp_path, stdin=subprocess.PIPE)
    try:
        assert wait_exit(quick, 30.0) is True and quick.returncode == 0
        assert wait_exit(quick, 30.0) is True  # already reaped
        assert wait_exit(blocked, 0.05) is False and blocked.returncode is None
    finally:
        blocked.kill()
        blocked.wait()
