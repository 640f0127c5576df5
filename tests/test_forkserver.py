"""The tests' fork server gives what ``subprocess.run`` of a console script gives (tests/helpers/forkserver.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import forkserver
from tests.helpers.lab_process import BIN, ROOT, lab_env


def test_a_forked_command_answers_as_a_fresh_one(tmp_path: Path) -> None:
    env = lab_env(tmp_path)
    for argv in (["lab", "--version"], ["lab", "run", "suite=no-such-suite"], ["doit", "list"]):
        fresh = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=120, check=False)
        forked = forkserver.run(argv, env=env)
        assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert fresh.returncode == 0 and "eval" in fresh.stdout  # doit list found the lab's tasks


def test_each_command_has_its_own_environment_directory_and_stdin(tmp_path: Path) -> None:
    script = tmp_path / "probe"
    script.write_text("import os, sys\nprint(os.getcwd(), os.environ.get('PROBE'), sys.stdin.read(), os.getpid())\n")
    first = forkserver.run([str(script)], env={**lab_env(tmp_path), "PROBE": "one"}, cwd=tmp_path, input="typed")
    second = forkserver.run([str(script)], env=lab_env(tmp_path), cwd=ROOT)
    cwd1, probe1, stdin1, pid1 = first.stdout.split()
    cwd2, probe2, pid2 = second.stdout.split()
    assert (cwd1, probe1, stdin1) == (str(tmp_path), "one", "typed")
    assert (cwd2, probe2) == (str(ROOT), "None")  # stdin was /dev/null: nothing read
    assert pid1 != pid2 and os.getpid() not in (int(pid1), int(pid2))


def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "sleeper"
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        forkserver.run([str(script)], env=lab_env(tmp_path), timeout=1)
    assert raised.value.output == b"started\n"


def test_a_command_with_other_interpreter_settings_starts_fresh(tmp_path: Path) -> None:
    (tmp_path / "shadow").mkdir()
    (tmp_path / "shadow" / "probe_module.py").write_text("WHERE = 'shadow'\n")
    script = tmp_path / "probe"
    script.write_text("import probe_module\nprint(probe_module.WHERE)\n")
    env = lab_env(tmp_path, PYTHONPATH=str(tmp_path / "shadow"))
    assert forkserver.run([str(script)], env=env).stdout == "shadow\n"  # PYTHONPATH is read as Python starts


def test_a_started_command_is_read_while_it_runs_and_takes_signals(tmp_path: Path) -> None:
    import signal

    script = tmp_path / "waiter"
    script.write_text("import signal, sys\nsignal.signal(signal.SIGINT, lambda *_: sys.exit(7))\n"
                      "print('to stderr', file=sys.stderr)\nprint('ready', flush=True)\nsignal.pause()\n")
    started = forkserver.start([str(script)], env=lab_env(tmp_path), cwd=tmp_path)
    assert started.stdout.readline() == "ready\n"  # before the command ended
    assert started.returncode is None and started.pid != os.getpid()
    started.send_signal(signal.SIGINT)
    out, err = started.communicate(timeout=60)
    assert (started.returncode, out, err) == (7, "", "to stderr\n")
    started.kill()  # once it ended: nothing is sent
