"""The executor seam (lab.execute.executor): chosen by name, a runtime setting, Ray imported only to run."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lab.config.compose import compose_config
from lab.errors import ConfigError
from lab.execute.call_cap import GatedProvider, local_call_gate
from lab.execute.executor import LocalExecutor, executor_for
from tests.helpers.lab_process import ROOT, command_env, run_cmd


def test_an_unknown_executor_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"executor\.name: unknown executor 'slurm' \(known: local, ray\)"):
        executor_for({"name": "slurm"})
    assert isinstance(executor_for({"name": "local"}), LocalExecutor)


def test_the_executor_is_a_runtime_setting_outside_the_config_hash() -> None:
    local, ray = compose_config(["mode=replay"]), compose_config(["mode=replay", "executor=ray"])
    assert local.config_hash() == ray.config_hash()
    assert ray.data["executor"] == {"name": "ray", "address": None, "resources": {"lab_run": 1.0},
                                    "max_retries": 3, "cancel_grace_s": 10.0, "spread": True}


class _Provider:
    """Counts the calls in flight; each waits until the test releases it."""

    name = "counting"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.release = threading.Event()

    def send(self, request: dict[str, object], *, purpose: str = "main", timeout_s: float | None = None) -> str:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        self.release.wait(5)
        with self.lock:
            self.now -= 1
        return "ok"


def test_the_local_call_gate_caps_calls_per_endpoint_within_the_process() -> None:
    provider = {"name": "openai", "base_url": "http://127.0.0.1:9/v1", "max_concurrent_calls": 2}
    gate = local_call_gate(provider, "live")
    assert gate is not None and local_call_gate({**provider, "max_concurrent_calls": None}, "live") is None
    assert local_call_gate(provider, "replay") is None  # no call leaves a replay
    inner = _Provider()
    gated = GatedProvider(inner, gate)
    threads = [threading.Thread(target=gated.send, args=({},)) for _ in range(6)]
    for thread in threads:
        thread.start()
    inner.release.set()
    for thread in threads:
        thread.join(10)
    assert inner.peak <= 2


def _imported(argv: list[str], data_dir: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime ARGV`` and return the top-level packages it imported."""
    env = command_env() | {"LAB_DATA_DIR": str(data_dir)}
    result = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=ROOT, env=env, capture_output=True,
                            text=True, stdin=subprocess.DEVNULL, timeout=120, check=False)
    modules = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.splitlines()
               if line.startswith("import time:")}
    return result, modules


@pytest.mark.slow
def test_import_help_and_a_no_op_eval_on_ray_never_import_ray(tmp_path: Path) -> None:
    assert "ray" not in _imported(["-c", "import lab"], tmp_path)[1]
    assert "ray" not in _imported(["-m", "lab", "--help"], tmp_path)[1]
    first = run_cmd(["lab", "run", "suite=smoke-coding", "mode=replay"], tmp_path / "runs")
    assert first.returncode == 0, first.stderr
    noop, modules = _imported(["-m", "lab", "run", "suite=smoke-coding", "mode=replay", "executor=ray"],
                              tmp_path / "runs")
    assert noop.returncode == 0, noop.stderr[-2000:]
    assert "7 run(s) up to date" in noop.stdout
    assert "executor (local -> ray) is a runtime setting" in noop.stdout
    assert "ray" not in modules
