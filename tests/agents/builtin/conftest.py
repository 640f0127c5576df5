"""Fixtures for the agent tests: real workspaces in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small repository copy: calc.py with a bug, its test, a data file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def total(n):\n    return sum(range(n))\n")
    (ws / "test_calc.py").write_text(
        "from calc import total\nassert total(3) == 6, total(3)\nprint('OK')\n")
    (ws / "data.txt").write_text("alpha\nbeta\n")
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret file."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    return out
