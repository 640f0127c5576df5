"""Fixtures for the sandbox tests: a working bwrap, task copies it can reach, a planted key."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.reaper import RunRoot
from tests.helpers.sandboxed import require_bwrap

FAKE_KEY = "sk-test-" + "f4k3" * 8
"""Planted in the lab's (the test process's) environment; must never show inside."""


@pytest.fixture(autouse=True)
def planted_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """``FAKE_API_KEY`` set in this process's environment, as a real key would be."""
    monkeypatch.setenv("FAKE_API_KEY", FAKE_KEY)
    return FAKE_KEY


@pytest.fixture(scope="session")
def bwrap() -> BwrapBackend:
    """A bwrap backend that started a probe sandbox (skips without one, fails under CI)."""
    return require_bwrap()


@pytest.fixture(scope="session")
def run_root() -> Iterator[RunRoot]:
    """A real lab temp root under the system temp dir.

    Not under pytest's tmp_path: as root the sandbox runs as an unprivileged
    host user, which must be able to search every parent of a task copy, and
    pytest's base temp dir is private (0700).
    """
    root = RunRoot.create()
    yield root
    root.close()


@pytest.fixture
def workspace(bwrap: BwrapBackend, run_root: RunRoot) -> Iterator[Path]:
    """A fresh task copy (one file, check.py) prepared for the bwrap sandbox."""
    path = run_root.path / f"ws-{secrets.token_hex(4)}"
    path.mkdir()
    (path / "check.py").write_text("print('ALL 1 CHECKS PASSED')\n", "utf-8")
    bwrap.prepare(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)
