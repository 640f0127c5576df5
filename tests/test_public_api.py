"""The public API: `__all__` sorted, complete and importable; importing `lab` stays cheap."""

from __future__ import annotations

import os
import subprocess
import sys

import lab


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert lab.__all__ == sorted(lab.__all__)
    for name in lab.__all__:
        assert getattr(lab, name) is not None, name


def test_every_public_name_is_exported() -> None:
    expected = {"load_suite", "run_suite", "wilson_interval", "pass_at_k", "pass_hat_k", "LabError",
                "compare_reports", "compose_config", "Suite", "Task", "RunSpec"}
    assert expected <= set(lab.__all__)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        lab.nope  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("lab.nope resolved")


def test_importing_lab_loads_no_heavy_dependency() -> None:
    code = "import sys, lab; print(sorted(m for m in ('hydra', 'doit', 'httpx', 'jsonschema') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_run_suite_returns_the_report(tmp_path: object) -> None:
    code = ("from lab import run_suite; doc = run_suite(['suite=core', 'mode=replay', 'json=true']); "
            "print('RESULT', doc['summary']['passes'], doc['header']['mode'])")
    env = {"LAB_DATA_DIR": str(tmp_path), "LAB_CACHE_DIR": os.environ["LAB_CACHE_DIR"], "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "RESULT 5 replay" in out.splitlines()[-1]
