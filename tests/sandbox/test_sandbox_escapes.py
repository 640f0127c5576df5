"""The escape corpus of issue 11: every attempt runs for real and must be contained.

Each attempt is a small Python program run with ``python3 -c`` inside the
bwrap backend, as a ``run_command`` or a verifier would run it. The host
side of each attempt is then checked (the file did not appear, the listener
got no connection, the key is nowhere in the output).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.sandbox import process
from lab.sandbox.base import Limits, spawn_args
from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.process import run_process
from lab.sandbox.reaper import RunRoot
from tests.helpers.sandboxed import run_launch

CHECKOUT = Path(__file__).resolve().parents[2]


def inside(bwrap: BwrapBackend, workspace: Path, code: str, *,
           limits: Limits = Limits(), network: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``python3 -c code`` in the sandbox; stdout/stderr decoded."""
    launch = bwrap.wrap(["python3", "-c", textwrap.dedent(code)], workspace=workspace,
                        env={}, limits=limits, network=network)
    result = run_launch(launch)
    return subprocess.CompletedProcess(result.args, result.returncode,
                                       result.stdout.decode("utf-8", "replace"),
                                       result.stderr.decode("utf-8", "replace"))


# Reading what is not the task copy ---------------------------------------------------

HOST_PATHS = ["/root", os.path.expanduser("~/.ssh"), "/root/.ssh", str(CHECKOUT),
              str(CHECKOUT / "lab" / "sandbox" / "bwrap.py"), "/work", "/home/lab/.ssh", "/etc/shadow", "/var", "/opt",
              "/sys"]


def test_host_paths_outside_the_allowlist_do_not_exist_inside(bwrap: BwrapBackend, workspace: Path) -> None:
    result = inside(bwrap, workspace, f"""
        import json, os
        print(json.dumps({{path: os.path.lexists(path) for path in {HOST_PATHS!r}}}))
        """)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == dict.fromkeys(HOST_PATHS, False)


def test_every_proc_environ_inside_is_free_of_the_key(bwrap: BwrapBackend, workspace: Path,
                                                     planted_key: str) -> None:
    result = inside(bwrap, workspace, """
        import os, json
        out = {}
        for entry in ["1", str(os.getppid()), "self", *os.listdir("/proc")]:
            if entry.isdigit() or entry == "self":
                try:
                    out[entry] = open(f"/proc/{entry}/environ", "rb").read().decode("latin-1")
                except OSError as exc:
                    out[entry] = f"error {exc.errno}"
        print(json.dumps(out))
        """)
    environs = json.loads(result.stdout)
    assert environs["1"] == "error 2", "pid 1 is bwrap's init, hidden under a mount"
    assert "HOME=/home/lab" in environs["self"]
    assert planted_key not in result.stdout and "FAKE_API_KEY" not in result.stdout


def test_the_key_stays_out_even_if_the_runner_passes_the_lab_environment(
        bwrap: BwrapBackend, workspace: Path, planted_key: str) -> None:
    launch = bwrap.wrap(["python3", "-c", textwrap.dedent("""
        import os
        for entry in os.listdir("/proc"):
            if entry.isdigit() and os.path.exists(f"/proc/{entry}/environ"):
                print(open(f"/proc/{entry}/environ", "rb").read())
        print(dict(os.environ))
        """)], workspace=workspace, env={})
    careless = {**os.environ, **launch.env}
    with spawn_args(launch) as (argv, fds):
        result = run_process(argv, cwd=launch.cwd, env=careless, timeout_ms=30_000, pass_fds=fds)
    assert result.exit_code == 0, result.stderr
    assert planted_key.encode() not in result.stdout + result.stderr


def test_proc_shows_only_the_sandbox_own_processes(bwrap: BwrapBackend,
                                                   workspace: Path) -> None:
    result = inside(bwrap, workspace, """
        import os
        print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
        """)
    pids = json.loads(result.stdout)
    assert pids == [1, 2], "pid 1 is bwrap's init, pid 2 the command; the host's are hidden"


def test_no_process_inside_shows_host_paths_or_the_sandbox_set_up(bwrap: BwrapBackend,
                                                                    workspace: Path) -> None:
    """bwrap's own command line would name the task copy's host path and the inner
    environment; its options reach it through a descriptor instead, which it closes, and
    its init (pid 1) is hidden."""
    result = inside(bwrap, workspace, """
        import os
        for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
            try:
                print(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
            except FileNotFoundError:
                print(f"{pid} hidden")
        print(sorted(os.listdir("/proc/self/fd")))
        """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "1 hidden", "pid 1 is bwrap's init: /proc/1 is an empty mount"
    assert lines[1].startswith("prlimit ") or lines[1].startswith("python3 "), lines
    assert str(workspace) not in result.stdout and str(workspace.parent) not in result.stdout
    assert "--bind" not in result.stdout and "--setenv" not in result.stdout
    assert lines[-1] == "['0', '1', '2', '3']", "only stdio and listdir's own descriptor: the args and seccomp files are closed"


def test_env_holds_only_the_allowlist(bwrap: BwrapBackend, workspace: Path,
                                      planted_key: str) -> None:
    launch = bwrap.wrap(["env"], workspace=workspace, env={"TASK_VAR": "declared"})
    result = process.run_launch(launch, timeout_ms=30_000)
    names = sorted(line.split("=", 1)[0] for line in result.stdout.decode().splitlines())
    # PWD is bwrap's own (--chdir /workspace).
    assert names == ["HOME", "LANG", "LOGNAME", "PATH", "PWD", "PYTHONDONTWRITEBYTECODE",
                     "TASK_VAR", "TMPDIR", "TZ", "USER"]
    assert planted_key.encode() not in result.stdout + result.stderr


# Writing outside the task copy -----------------------------------------------------

def test_writing_to_the_root_fails(bwrap: BwrapBackend, workspace: Path) -> None:
    result = inside(bwrap, workspace, "open('/escape', 'w')")
    assert result.returncode != 0 and "Read-only file system" in result.stderr


def test_host_tmp_is_not_the_sandbox_tmp(bwrap: BwrapBackend, workspace: Path,
                                         run_root: RunRoot) -> None:
    name = f"lab-escape-{secrets.token_hex(6)}"
    result = inside(bwrap, workspace, f"""
        open('/tmp/{name}', 'w').write('x')
        print('written inside')
        """)
    assert result.stdout.strip() == "written inside"
    assert not os.path.lexists(f"/tmp/{name}")


def test_writing_to_the_checkout_fails(bwrap: BwrapBackend, workspace: Path) -> None:
    target = CHECKOUT / f"escape-{secrets.token_hex(6)}"
    result = inside(bwrap, workspace, f"open({str(target)!r}, 'w').write('x')")
    assert result.returncode != 0
    assert not target.exists()


DOTDOT = ["../escape", "../../escape", "../../../../../../escape"]


def write_each(bwrap: BwrapBackend, workspace: Path, paths: list[str], mode: str) -> dict[str, str]:
    """Open each of ``paths`` with ``mode`` and write to it, in one sandboxed program: path -> "written"
    or the error's text."""
    result = inside(bwrap, workspace, f"""
        import json
        outcome = {{}}
        for path in {paths!r}:
            try:
                open(path, {mode!r}).write("x")
                outcome[path] = "written"
            except OSError as exc:
                outcome[path] = exc.strerror
        print(json.dumps(outcome))
        """)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_writing_through_dotdot_stays_inside(bwrap: BwrapBackend, workspace: Path) -> None:
    assert write_each(bwrap, workspace, DOTDOT, "w") == dict.fromkeys(DOTDOT, "Read-only file system")
    assert not (workspace.parent / "escape").exists()


def test_writing_through_a_planted_symlink_misses_the_host(
        bwrap: BwrapBackend, workspace: Path, run_root: RunRoot) -> None:
    outside = run_root.path / f"outside-{secrets.token_hex(4)}"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    (workspace / "passwd-link").symlink_to("/etc/passwd")
    outcome = write_each(bwrap, workspace, ["link/pwned", "passwd-link"], "a")
    assert outcome["link/pwned"] == "No such file or directory"
    assert outcome["passwd-link"] in {"Permission denied", "Read-only file system"}
    assert list(outside.iterdir()) == []


def test_a_hard_link_to_a_host_file_cannot_be_made(bwrap: BwrapBackend,
                                                   workspace: Path) -> None:
    result = inside(bwrap, workspace, """
        import json, os
        outcome = {}
        for source in ("/usr/bin/env", "/etc/passwd", "/etc/ld.so.cache"):
            try:
                os.link(source, "hardlink-" + os.path.basename(source))
                outcome[source] = "linked"
            except OSError as exc:
                outcome[source] = exc.strerror
        print(json.dumps(outcome))
        """)
    outcome = json.loads(result.stdout)
    assert set(outcome.values()) == {"Invalid cross-device link"}, outcome
    assert sorted(p.name for p in workspace.iterdir()) == ["check.py"]


# Network -------------------------------------------------------------------------------

@pytest.fixture
def host_listener() -> Iterator[socket.socket]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    yield listener
    listener.close()


def _connect_code(port: int) -> str:
    return f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=10).close()
            print("connected")
        except OSError as exc:
            print("refused", type(exc).__name__)
        """


def test_a_host_loopback_port_is_unreachable(bwrap: BwrapBackend, workspace: Path,
                                             host_listener: socket.socket) -> None:
    port = host_listener.getsockname()[1]
    result = inside(bwrap, workspace, _connect_code(port))
    assert result.stdout.startswith("refused"), result.stdout + result.stderr
    with pytest.raises(BlockingIOError):
        host_listener.accept()


def test_granted_network_reaches_the_host_loopback(bwrap: BwrapBackend, workspace: Path,
                                                   host_listener: socket.socket) -> None:
    port = host_listener.getsockname()[1]
    result = inside(bwrap, workspace, _connect_code(port), network=True)
    assert result.stdout.strip() == "connected", result.stderr


def test_a_host_abstract_unix_socket_is_unreachable(bwrap: BwrapBackend,
                                                    workspace: Path) -> None:
    name = f"\0lab-escape-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen(1)
        result = inside(bwrap, workspace, f"""
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect({name!r})
                print("connected")
            except OSError as exc:
                print("refused", exc.strerror)
            """)
    assert result.stdout.startswith("refused"), result.stdout


# Resource limits -----------------------------------------------------------------------

FORK_UNTIL_REFUSED = """
    import errno, os
    read_end, write_end = os.pipe()
    forked, refused = 0, None
    for _ in range(5000):          # bounded: stops by itself even if never refused
        try:
            pid = os.fork()
        except OSError as exc:
            refused = errno.errorcode[exc.errno]
            break
        if pid == 0:               # each child waits until the parent is done
            os.close(write_end)
            os.read(read_end, 1)
            os._exit(0)
        forked += 1
    os.close(write_end)
    print(forked, refused)
    """


def test_a_fork_bomb_is_refused_at_the_process_limit(bwrap: BwrapBackend,
                                                     workspace: Path) -> None:
    result = inside(bwrap, workspace, FORK_UNTIL_REFUSED, limits=Limits(max_processes=40))
    forked, refused = result.stdout.split()
    assert refused == "EAGAIN"
    assert int(forked) < 40


def test_writing_past_the_file_size_limit_fails(bwrap: BwrapBackend, workspace: Path) -> None:
    limit = 1 << 20
    result = inside(bwrap, workspace, f"""
        with open("big.bin", "wb") as handle:
            handle.write(b"x" * {2 * limit})
        """, limits=Limits(max_file_size_bytes=limit))
    assert result.returncode != 0 and "File too large" in result.stderr
    assert (workspace / "big.bin").stat().st_size <= limit


def test_the_memory_backed_tmp_is_bounded(bwrap: BwrapBackend, workspace: Path) -> None:
    result = inside(bwrap, workspace, """
        with open("/tmp/fill", "wb") as handle:
            handle.write(b"x" * (4 << 20))
        """, limits=Limits(tmpfs_size_bytes=1 << 20))
    assert result.returncode != 0 and "No space left on device" in result.stderr


def test_open_files_are_bounded(bwrap: BwrapBackend, workspace: Path) -> None:
    result = inside(bwrap, workspace, """
        import resource
        print(resource.getrlimit(resource.RLIMIT_NOFILE))
        """, limits=Limits(max_open_files=64))
    assert result.stdout.strip() == "(64, 64)"


@pytest.mark.slow
def test_cpu_time_is_bounded(bwrap: BwrapBackend, workspace: Path) -> None:
    result = inside(bwrap, workspace, "while True: pass", limits=Limits(cpu_time_s=1))
    assert result.returncode != 0
