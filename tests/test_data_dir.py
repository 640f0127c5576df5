"""Results land in one place whatever the working directory (lab.paths.data_dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import paths


def test_lab_data_dir_overrides(tmp_path: Path) -> None:
    assert paths.data_dir({"LAB_DATA_DIR": str(tmp_path)}) == tmp_path


def test_checkout_runs_whatever_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.data_dir({}) == paths.ROOT / "runs"


def test_installed_outside_a_checkout_uses_the_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "ROOT", tmp_path / "site-packages")  # no pyproject.toml beside the package
    assert paths.data_dir({"XDG_DATA_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "reliability-lab"
    assert paths.data_dir({}).parts[-3:] == (".local", "share", "reliability-lab")
