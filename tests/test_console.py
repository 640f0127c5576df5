"""A closed pipe on standard output or error: the eval goes on, quietly, and exits with its own code."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.console import ClosedPipeTolerant, print_line
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


LINE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85"
                                                                                  "\u2028\u2029"), max_size=300)


def _printed_at_once(per_thread: list[list[str]], path: Path) -> list[str]:
    """Each list of lines printed by a thread of its own, all started together, through print_line into
    a stream like the command's stdout (a ClosedPipeTolerant over a text file); the lines read back."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        with path.open("w", encoding="utf-8", newline="\n") as raw:
            out = ClosedPipeTolerant(raw)
            start = threading.Barrier(len(per_thread))

            def write(lines: list[str]) -> None:
                start.wait()
                for line in lines:
                    print_line(line, out)

            threads = [threading.Thread(target=write, args=(lines,)) for lines in per_thread]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    written = path.read_text(encoding="utf-8").split("\n")
    assert written.pop() == ""
    return written


def test_lines_printed_from_threads_at_once_stay_whole(tmp_path: Path) -> None:
    # Runs finishing at once in threads (jobs=N) print their lines through print_line. With print() (the
    # text, then the newline) about every other run of this test found a line ending inside another's.
    per_thread = [[json.dumps({"thread": n, "line": i, "pad": "x" * (i % 50)}) for i in range(3000)] for n in range(4)]
    written = _printed_at_once(per_thread, tmp_path / "out.jsonl")
    assert sorted(written) == sorted(line for lines in per_thread for line in lines)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.lists(LINE_TEXT, min_size=1, max_size=200), min_size=2, max_size=5))
def test_any_lines_printed_from_threads_at_once_stay_whole(tmp_path_factory: pytest.TempPathFactory,
                                                           per_thread: list[list[str]]) -> None:
    written = _printed_at_once(per_thread, tmp_path_factory.mktemp("lines") / "out.txt")
    assert sorted(written) == sorted(line for lines in per_thread for line in lines)


def test_a_stdout_that_cannot_encode_the_banner_writes_question_marks(tmp_path: Path) -> None:
    # PYTHONIOENCODING=ascii: the banner's "·" cannot be encoded; the eval still runs and exits 0, and
    # json=true lines stay JSON.
    env = _env(tmp_path) | {"PYTHONIOENCODING": "ascii"}
    result = subprocess.run([*ARGV, "json=true"], cwd=ROOT, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert [json.loads(line)["schemaVersion"] for line in result.stdout.splitlines()] == [1, 1]
    plain = subprocess.run(ARGV, cwd=ROOT, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert plain.returncode == 0 and "Traceback" not in plain.stderr, plain.stderr
    assert plain.stdout.startswith("eval smoke-coding 1.0.0 ? replay ? "), plain.stdout
