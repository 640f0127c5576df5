"""A closed pipe on standard output or error: the eval goes on, quietly, and exits with its own code."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from lab.console import ClosedPipeTolerant
from tests.helpers.lab_process import BIN, ROOT, command_env


def test_writes_after_the_reader_closed_are_discarded() -> None:
    read_end, write_end = os.pipe()
    stream = ClosedPipeTolerant(io.TextIOWrapper(os.fdopen(write_end, "wb"), encoding="utf-8"))
    stream.write("first line\n")
    stream.flush()
    assert os.read(read_end, 100) == b"first line\n"
    os.close(read_end)
    stream.write("x" * 100_000)  # more than the buffer: the write itself meets the closed pipe
    stream.flush()
    assert stream.reader_gone
    assert os.path.samefile(f"/proc/self/fd/{stream.fileno()}", os.devnull)
    stream.write("after\n")
    stream.flush()
    assert stream.isatty() is False  # other attributes are the wrapped stream's
    stream.close()


def _env(data: Path) -> dict[str, str]:
    return command_env() | {"LAB_DATA_DIR": str(data)}


ARGV = [str(BIN / "lab"), "run", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]",
        "agent.limits.command_timeout_ms=59000"]  # a config-hash warning on stderr too


def _one_report(data: Path) -> str:
    [report] = data.glob("smoke-coding/*/reports/*/report.json")
    return report.read_text(encoding="utf-8")


@pytest.mark.parametrize("stderr_too", [False, True], ids=["stdout", "stdout-and-stderr"])
def test_lab_run_piped_into_head_completes_the_eval(tmp_path: Path, stderr_too: bool) -> None:
    """`lab run … | head -1` and `lab run … 2>&1 | head -1`."""
    with subprocess.Popen(ARGV, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if stderr_too else subprocess.PIPE,
                          stdin=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        first = process.stdout.readline()  # what `| head -1` reads before it exits
        process.stdout.close()
        stderr = process.stderr.read().decode() if process.stderr else ""
        code = process.wait(timeout=120)
    assert first.startswith(b"eval smoke-coding 1.0.0 ")
    assert code == 0, stderr
    assert "Broken pipe" not in stderr and "Traceback" not in stderr, stderr
    assert '"passes": 1' in _one_report(tmp_path)


@pytest.mark.parametrize("redirect", [">&-", "2>&-", ">/dev/full"])
def test_a_closed_or_full_console_loses_no_result(tmp_path: Path, redirect: str) -> None:
    result = subprocess.run(["sh", "-c", f'exec "$@" {redirect}', "sh", *ARGV], cwd=ROOT, env=_env(tmp_path),
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert '"passes": 1' in _one_report(tmp_path)
