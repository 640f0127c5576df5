"""Run roots and reaping what a lab killed with SIGKILL left behind (real processes)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.sandbox.base import SandboxError
from lab.sandbox.reaper import LOCK_NAME, Reaped, RunRoot, reap_stale, runs_dir
from tests.helpers.sandboxed import open_pidfds, pids_with_marker, still_running

CHECKOUT = Path(__file__).resolve().parents[2]

DEAD_PID = 4_194_304 + 1
"""Above the kernel's largest pid_max: never a live process."""


def test_a_run_root_is_locked_while_it_lives(tmp_path: Path) -> None:
    with RunRoot.create(tmp_path) as root:
        assert root.path.parent == tmp_path / f"lab-runs-{os.geteuid()}"
        assert root.path.stat().st_mode & 0o777 == 0o711
        fd = os.open(root.path / LOCK_NAME, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert not root.path.exists()


def test_a_live_labs_run_root_is_not_reaped(tmp_path: Path) -> None:
    with RunRoot.create(tmp_path) as root:
        assert reap_stale(tmp_path) == Reaped(dirs=[], killed=[], failed=[])
        assert root.path.exists()


def _stale_dir(tmp_path: Path, name: str = f"{DEAD_PID}-0123456789ab") -> Path:
    path = runs_dir(tmp_path) / name
    (path / "ws").mkdir(parents=True)
    (path / LOCK_NAME).touch()
    return path


def test_a_dead_labs_unlocked_run_root_is_reaped(tmp_path: Path) -> None:
    stale = _stale_dir(tmp_path)
    (stale / "ws" / "readonly").mkdir()
    (stale / "ws" / "readonly").chmod(0o500)
    reaped = reap_stale(tmp_path)
    assert reaped.dirs == [str(stale)] and not stale.exists()
    assert reaped.line == "reaped what an earlier lab left: 1 run dir, 0 processes"


def test_a_run_root_whose_lock_is_still_held_is_kept(tmp_path: Path) -> None:
    stale = _stale_dir(tmp_path)
    fd = os.open(stale / LOCK_NAME, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a child of the dead lab still holds it
        assert reap_stale(tmp_path).dirs == []
    finally:
        os.close(fd)
    assert stale.exists()


@pytest.mark.parametrize("name", ["notes", "123", "123-XYZ", "123-abc"])
def test_entries_not_named_like_a_run_root_are_never_touched(tmp_path: Path, name: str) -> None:
    other = runs_dir(tmp_path) / name
    other.mkdir()
    assert reap_stale(tmp_path).line == ""
    assert other.exists()


def test_an_unsafe_temp_root_is_refused(tmp_path: Path) -> None:
    path = tmp_path / f"lab-runs-{os.geteuid()}"
    path.mkdir()
    path.chmod(0o777)
    with pytest.raises(SandboxError, match="not writable by others; remove it"):
        reap_stale(tmp_path)


LAB = textwrap.dedent("""
    import json, subprocess, sys
    from pathlib import Path
    from lab.sandbox.base import spawn_args
    from lab.sandbox.bwrap import BwrapBackend
    from lab.sandbox.none import NoneBackend
    from lab.sandbox.reaper import RunRoot
    base, backend_name, marker = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    root = RunRoot.create(base)
    workspace = root.path / "ws"
    workspace.mkdir()
    backend = NoneBackend() if backend_name == "none" else BwrapBackend()
    backend.prepare(workspace)
    code = "import sys, time; print('running', flush=True); time.sleep(1000)"
    launch = backend.wrap(["python3", "-c", code, marker + "-command"], workspace=workspace, env={})
    with spawn_args(launch) as (argv, fds):
        child = subprocess.Popen(argv, env=launch.env, cwd=launch.cwd, pass_fds=fds,
                                 stdout=subprocess.PIPE, start_new_session=True)
    child.stdout.readline()
    print(json.dumps({"root": str(root.path)}), flush=True)
    sys.stdin.read()
""")


@dataclass
class KilledLab:
    """What a lab killed mid-run left: its temp base, run root and command pidfds."""

    base: Path
    root: Path
    pids: list[int]
    pidfds: list[int]


@pytest.fixture
def lab_killed_mid_run(request: pytest.FixtureRequest, tmp_path: Path) -> KilledLab:
    """A real lab process running one command, then killed with SIGKILL."""
    backend_name = request.param
    if backend_name == "bwrap":
        request.getfixturevalue("bwrap")
        base = Path(os.environ.get("TMPDIR") or "/tmp")  # reachable by the sandbox user
    else:
        base = tmp_path
    marker = f"lab-reap-{os.urandom(6).hex()}"
    with subprocess.Popen([sys.executable, "-c", LAB, str(base), backend_name, marker],
                          cwd=CHECKOUT, env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as lab:
        assert lab.stdout is not None
        info = json.loads(lab.stdout.readline())
        commands = pids_with_marker(f"{marker}-command")
        assert commands, "the lab's command is running"
        pidfds = open_pidfds(commands)
        lab.kill()
        lab.communicate(b"")
    return KilledLab(base=base, root=Path(info["root"]), pids=commands, pidfds=pidfds)


@pytest.mark.parametrize("lab_killed_mid_run", ["none"], indirect=True)
def test_reaping_kills_a_host_command_the_killed_lab_left(
        lab_killed_mid_run: KilledLab) -> None:
    lab = lab_killed_mid_run
    reaped = reap_stale(lab.base)
    assert str(lab.root) in reaped.dirs and not lab.root.exists()
    assert set(lab.pids) <= set(reaped.killed)
    assert still_running(lab.pidfds) == 0
    assert reaped.line.startswith("reaped what an earlier lab left: ")


@pytest.mark.parametrize("lab_killed_mid_run", ["bwrap"], indirect=True)
def test_a_sandbox_dies_with_its_lab_and_the_run_root_is_reaped(
        lab_killed_mid_run: KilledLab) -> None:
    lab = lab_killed_mid_run
    # --die-with-parent: the sandbox goes with the lab, before any reaping.
    assert still_running(lab.pidfds) == 0
    reaped = reap_stale(lab.base)
    assert str(lab.root) in reaped.dirs and not lab.root.exists()
