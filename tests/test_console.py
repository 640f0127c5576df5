"""A closed pipe on standard output: the eval goes on, quietly, and exits with its own code."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

from lab.console import ClosedPipeTolerant
from tests.helpers.lab_process import BIN, ROOT


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


def test_lab_run_piped_into_head_completes_the_eval(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")} | {"LAB_DATA_DIR": str(tmp_path)}
    with subprocess.Popen([str(BIN / "lab"), "run", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]"],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()  # what `| head -1` reads before it exits
        process.stdout.close()
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert first.startswith(b"eval smoke-coding 1.0.0 ")
    assert code == 0, stderr
    assert "Broken pipe" not in stderr and "Traceback" not in stderr, stderr
    [report] = tmp_path.glob("smoke-coding/*/reports/*/report.json")
    assert '"passes": 1' in report.read_text(encoding="utf-8")
