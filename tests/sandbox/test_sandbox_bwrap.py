"""What works inside the bwrap sandbox: the commands the bundled suites run, git, sockets."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path, PurePosixPath

import pytest

from lab.sandbox import hostfs, process
from lab.sandbox.base import Bind, Limits, SandboxError
from lab.sandbox.bwrap import WORKSPACE, BwrapBackend
from lab.sandbox.reaper import RunRoot
from tests.helpers.sandboxed import run_launch

AS_ROOT = os.geteuid() == 0


def _run(bwrap: BwrapBackend, workspace: Path, argv: list[str],
         env: dict[str, str] | None = None, **options: object) -> subprocess.CompletedProcess[str]:
    launch = bwrap.wrap(argv, workspace=workspace, env=env or {}, **options)  # type: ignore[arg-type]
    result = run_launch(launch)
    return subprocess.CompletedProcess(result.args, result.returncode,
                                       result.stdout.decode(), result.stderr.decode())


def test_a_bundled_verifier_command_runs_through_the_lab_runner(bwrap: BwrapBackend,
                                                                workspace: Path) -> None:
    launch = bwrap.wrap(["python3", "check.py"], workspace=workspace, env={})
    result = process.run_launch(launch, timeout_ms=30_000)
    assert (result.exit_code, result.stdout) == (0, b"ALL 1 CHECKS PASSED\n")


def test_commands_see_the_task_copy_at_workspace(bwrap: BwrapBackend, workspace: Path) -> None:
    result = _run(bwrap, workspace, ["python3", "-c", "import os; print(os.getcwd())"])
    assert result.stdout == "/workspace\n"
    assert bwrap.inside_path(workspace) == WORKSPACE == PurePosixPath("/workspace")


def test_the_command_runs_as_an_unprivileged_named_user(bwrap: BwrapBackend,
                                                       workspace: Path) -> None:
    result = _run(bwrap, workspace, ["python3", "-c", (
        "import os, pwd, socket; print(os.getuid(), os.getgid(), pwd.getpwuid(os.getuid()).pw_name,"
        " os.path.expanduser('~'), socket.gethostname())")])
    assert result.stdout == "1000 1000 lab /home/lab lab\n"


def test_writes_in_the_task_copy_reach_the_host(bwrap: BwrapBackend, workspace: Path) -> None:
    result = _run(bwrap, workspace, ["python3", "-c", (
        "import os; os.rename('check.py', 'renamed.py'); open('new.txt', 'w').write('hi')")])
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["new.txt", "renamed.py"]
    assert (workspace / "new.txt").read_text() == "hi"


def test_the_declared_task_env_is_set(bwrap: BwrapBackend, workspace: Path) -> None:
    result = _run(bwrap, workspace, ["sh", "-c", "echo $TASK_MODE $TZ $LANG"],
                  env={"TASK_MODE": "strict"})
    assert result.stdout == "strict UTC C.UTF-8\n"


def test_git_works_in_a_task_copy_initialised_on_the_host(bwrap: BwrapBackend,
                                                          run_root: RunRoot) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    # The order the lab uses: copy, `git init` on the host, then prepare.
    workspace = run_root.path / "git-copy"
    workspace.mkdir()
    (workspace / "check.py").write_text("print('ok')\n")
    identity = {"GIT_AUTHOR_NAME": "Lab", "GIT_AUTHOR_EMAIL": "lab@example.invalid",
                "GIT_COMMITTER_NAME": "Lab", "GIT_COMMITTER_EMAIL": "lab@example.invalid"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
        subprocess.run([git, "-c", "init.defaultBranch=main", *args], cwd=workspace,
                       env={**identity, "PATH": os.defpath, "HOME": str(workspace)},
                       check=True, capture_output=True)
    bwrap.prepare(workspace)
    result = _run(bwrap, workspace, ["sh", "-c",
                                     "echo x >> check.py && git commit -qam edit && "
                                     "git log --format=%s && git status --short"], env=identity)
    assert result.stdout == "edit\nfixture\n", result.stderr


def test_the_network_files_appear_only_with_network(bwrap: BwrapBackend,
                                                    workspace: Path) -> None:
    # Without network /etc/resolv.conf is the empty mount point of the sandbox's /etc.
    code = ["python3", "-c", "import os; print(os.path.getsize('/etc/resolv.conf') > 0)"]
    if not os.path.isfile("/etc/resolv.conf") or os.path.getsize("/etc/resolv.conf") == 0:
        pytest.skip("the host has no non-empty /etc/resolv.conf")
    assert _run(bwrap, workspace, code).stdout == "False\n"
    assert _run(bwrap, workspace, code, network=True).stdout == "True\n"


def test_a_bound_unix_socket_reaches_a_host_server(bwrap: BwrapBackend, workspace: Path,
                                                   run_root: RunRoot) -> None:
    path = run_root.path / "gateway.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        server.settimeout(30)
        bwrap.prepare(path)  # as root: the sandbox user must be allowed to connect
        answered: list[bytes] = []

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                answered.append(conn.recv(16))
                conn.sendall(b"pong")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        result = _run(bwrap, workspace, ["python3", "-c", (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            "s.connect('/run/lab/gateway.sock'); s.sendall(b'ping'); print(s.recv(16).decode())")],
            binds=[Bind.unix_socket(path)])
        thread.join(timeout=30)
    assert result.stdout == "pong\n", result.stderr
    assert answered == [b"ping"]


def test_a_bind_with_a_missing_source_is_refused(bwrap: BwrapBackend, workspace: Path) -> None:
    with pytest.raises(SandboxError, match="bind source '/nonexistent/x' does not exist"):
        bwrap.wrap(["true"], workspace=workspace, env={},
                   binds=[Bind(Path("/nonexistent/x"), PurePosixPath("/x"))])


def test_no_limits_needs_no_prlimit(bwrap: BwrapBackend, workspace: Path) -> None:
    none = Limits(max_processes=None, max_file_size_bytes=None, max_open_files=None,
                  cpu_time_s=None, tmpfs_size_bytes=None)
    launch = bwrap.wrap(["true"], workspace=workspace, env={}, limits=none)
    assert not any(arg.endswith("prlimit") for arg in launch.argv)
    assert run_launch(launch).returncode == 0


@pytest.mark.skipif(not AS_ROOT, reason="only a root lab hands files to another uid")
def test_prepare_hands_the_task_copy_to_the_sandbox_user(bwrap: BwrapBackend,
                                                         workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "f").write_text("x")
    bwrap.prepare(workspace)
    owners = {os.lstat(p).st_uid for p in [workspace, *workspace.rglob("*")]}
    assert owners == {bwrap.drop_to}


@pytest.mark.skipif(not AS_ROOT, reason="only a root lab hands files to another uid")
def test_a_task_copy_not_yet_prepared_is_refused(bwrap: BwrapBackend, run_root: RunRoot) -> None:
    fresh = run_root.path / "not-prepared"
    fresh.mkdir()
    with pytest.raises(SandboxError, match="call prepare\\(\\) on it first"):
        bwrap.wrap(["true"], workspace=fresh, env={})


@pytest.mark.skipif(not AS_ROOT, reason="only a root lab changes owners")
def test_prepare_never_follows_a_planted_symlink(bwrap: BwrapBackend, workspace: Path,
                                                 run_root: RunRoot) -> None:
    host_file = run_root.path / "host-owned.txt"
    host_file.write_text("root's")
    (workspace / "link").symlink_to(host_file)
    bwrap.prepare(workspace)
    assert os.lstat(host_file).st_uid == 0
    assert os.lstat(workspace / "link").st_uid == bwrap.drop_to


@pytest.mark.skipif(not AS_ROOT, reason="only a root lab drops to another uid")
def test_a_task_copy_under_a_private_parent_is_refused(bwrap: BwrapBackend,
                                                       tmp_path: Path) -> None:
    private = tmp_path / "private"
    (private / "ws").mkdir(parents=True)
    private.chmod(0o700)
    with pytest.raises(SandboxError, match="is not searchable by the sandbox's host uid 65534"):
        bwrap.prepare(private / "ws")


def _lab_python_reachable() -> bool:
    if not AS_ROOT:
        return True
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    return all(hostfs.unreachable_parent(Path(p), 65534) is None for p in prefixes)


@pytest.mark.skipif(_lab_python_reachable(), reason="the lab's interpreter is reachable here")
def test_exposing_an_unreachable_lab_python_names_the_blocking_parent() -> None:
    with pytest.raises(SandboxError, match="is not searchable by the sandbox's host uid"):
        BwrapBackend(expose_python=True)


@pytest.mark.skipif(not _lab_python_reachable(),
                    reason="as root, the lab's interpreter sits under a private directory")
def test_the_lab_python_and_its_pytest_run_inside_when_exposed(workspace: Path) -> None:
    backend = BwrapBackend(expose_python=True)
    result = _run(backend, workspace, ["python3", "-m", "pytest", "--version"])
    assert result.returncode == 0 and "pytest" in result.stdout + result.stderr
