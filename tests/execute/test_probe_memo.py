"""sandbox=auto/bwrap without a probe on a host known to run bwrap, confirmed before any run
(lab.execute.probe_memo, lab.execute.sandboxing.choose_sandbox / open_chosen).

A stand-in ``bwrap`` on ``PATH`` logs every start and succeeds, or fails
while a flag file exists (a flag the fingerprint does not see: the case of a
host that changed in a way the fingerprint misses).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import lab.execute.sandboxing as sandboxing
from lab.errors import SandboxError
from lab.execute.probe_memo import bwrap_remembered, fingerprint, remember_bwrap
from lab.execute.sandboxing import SandboxChoice, choose_sandbox, confirm_choice, open_chosen
from lab.stamps import shared_cache_dir


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may enter and write (as root the lab starts bwrap as an unprivileged
    user, who cannot read pytest's private tmp_path)."""
    path = Path(tempfile.mkdtemp(prefix="lab-fake-bwrap-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_bwrap(shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(start log, failure flag) of a stand-in bwrap first on PATH; this process starts with nothing resolved."""
    bin_dir, log, flag = shared_dir / "bin", shared_dir / "starts.log", shared_dir / "fail"
    bin_dir.mkdir(mode=0o755)
    bin_dir.chmod(0o755)
    program = bin_dir / "bwrap"
    program.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "bubblewrap 0.8.0"; exit 0; fi\n'
                       f'echo start >> {log}\n'
                       f'if [ -e {flag} ]; then echo "bwrap: setting up uid map: Permission denied" >&2; exit 1; fi\n'
                       f'exit 0\n', encoding="utf-8")
    program.chmod(0o755)
    log.touch()
    log.chmod(0o666)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.defpath}")
    monkeypatch.setattr(sandboxing, "_resolved", {})  # as in a new process
    return log, flag


def starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandboxing, "_resolved", {})


def remembered_choice(requested: str, monkeypatch: pytest.MonkeyPatch) -> SandboxChoice:
    """The choice a second command makes, after a first one probed and remembered bwrap."""
    choose_sandbox(requested)
    new_process(monkeypatch)
    return choose_sandbox(requested)


@pytest.mark.parametrize("requested", ["auto", "bwrap"])
def test_a_working_bwrap_is_remembered_and_not_probed_again(fake_bwrap: tuple[Path, Path], requested: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    log, _ = fake_bwrap
    first = choose_sandbox(requested)
    assert (first.name, first.remembered, starts(log)) == ("bwrap", False, 1)
    new_process(monkeypatch)
    second = choose_sandbox(requested)
    assert (second.name, second.remembered, starts(log)) == ("bwrap", True, 1)


def test_the_remembered_answer_is_confirmed_when_the_sandbox_opens(fake_bwrap: tuple[Path, Path],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    log, _ = fake_bwrap
    choice = remembered_choice("auto", monkeypatch)
    opened = open_chosen(choice)
    assert opened.name == "bwrap" and starts(log) == 2
    assert bwrap_remembered()


def test_auto_that_now_falls_back_stops_before_any_run_and_forgets(
        fake_bwrap: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _, flag = fake_bwrap
    choice = remembered_choice("auto", monkeypatch)
    flag.touch()
    with pytest.raises(SandboxError) as caught:
        open_chosen(choice)
    assert str(caught.value) == ("sandbox=auto: this command planned its runs under bwrap (a probe on this host "
                                 "found it working earlier), but it now resolves to none; nothing was run: "
                                 "run the command again")
    assert "commands run UNSANDBOXED" in capsys.readouterr().err
    assert not bwrap_remembered()


def test_explicit_bwrap_that_now_fails_is_an_error_and_is_forgotten(fake_bwrap: tuple[Path, Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _, flag = fake_bwrap
    choice = remembered_choice("bwrap", monkeypatch)
    flag.touch()
    with pytest.raises(SandboxError, match="cannot start a sandbox here: bwrap: setting up uid map"):
        open_chosen(choice)
    assert not bwrap_remembered()


def test_a_failing_bwrap_is_probed_by_every_command(fake_bwrap: tuple[Path, Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    log, flag = fake_bwrap
    flag.touch()
    assert choose_sandbox("auto").name == "none"
    new_process(monkeypatch)
    assert choose_sandbox("auto").name == "none" and starts(log) == 2
    assert not bwrap_remembered()


def test_the_fingerprint_follows_the_program_and_path(fake_bwrap: tuple[Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    remember_bwrap()
    assert bwrap_remembered()
    program = fake_bwrap[0].parent / "bin" / "bwrap"
    program.write_text(program.read_text() + "# upgraded\n")
    assert not bwrap_remembered()
    remember_bwrap()
    before = fingerprint()
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:/opt/other")
    assert fingerprint() != before and not bwrap_remembered()


@pytest.mark.parametrize("content", [b"garbage", b'{"schemaVersion": 1, "kind": "sandbox-probe", "works": true}'])
def test_a_corrupt_or_foreign_memo_is_not_trusted(fake_bwrap: tuple[Path, Path], content: bytes) -> None:
    remember_bwrap()
    (entry,) = (shared_cache_dir() / "sandbox").glob("*.json")
    entry.write_bytes(content)
    assert not bwrap_remembered()


def test_a_stale_memo_is_probed_again_before_any_run_is_planned(
        fake_bwrap: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25, finding 8: the next command exited 1 asking to be run again; now it re-probes by itself
    and plans its runs under the backend that holds (lab.build.graph plans them again)."""
    _, flag = fake_bwrap
    choice = remembered_choice("auto", monkeypatch)
    flag.touch()
    opened, holds = confirm_choice(choice)
    assert (opened.name, holds.name, holds.remembered) == ("none", "none", False)
    assert "commands run UNSANDBOXED" in capsys.readouterr().err
    assert not bwrap_remembered()
    flag.unlink()
    new_process(monkeypatch)
    confirmed, same = confirm_choice(remembered_choice("auto", monkeypatch))
    assert (confirmed.name, same.name, same.remembered) == ("bwrap", "bwrap", True)
