"""Every test gets its own new, empty, private temp dir and run store (``tests/conftest.py``).

``tmp_path`` and the ``LAB_DATA_DIR``/``LAB_CACHE_DIR`` of ``clean_env`` are made with
``tempfile.mkdtemp`` under pytest's base temp dir rather than as pytest's numbered dirs, whose
cost grows with every directory made before them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

SEEN: list[Path] = []


@pytest.mark.parametrize("n", range(3))
def test_each_test_has_a_new_private_tmp_path_and_run_store(n: int, tmp_path: Path,
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    dirs = [tmp_path, Path(os.environ["LAB_DATA_DIR"]), Path(os.environ["LAB_CACHE_DIR"])]
    base = tmp_path_factory.getbasetemp()
    for path in dirs:
        assert path.parent == base and path.is_dir() and not any(path.iterdir())
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert tmp_path.name.startswith("test_each_test_has_a_new_priv")
    assert len(set(dirs)) == 3 and not set(dirs) & set(SEEN)
    SEEN.extend(dirs)


def test_the_lab_commands_of_tests_share_a_session_cache_dir_never_the_users(
        tmp_path: Path, commands_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.lab_process import run_cmd

    base = tmp_path_factory.getbasetemp()
    assert commands_cache_dir.parent in (base, base.parent)  # the session's, shared by the test workers
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def entries() -> set[tuple[str, int]]:
        return {(p.name, p.stat().st_mtime_ns) for p in (commands_cache_dir / "config").glob("*.json")}

    before = entries()
    result = run_cmd(["lab", "run", "suite=core", "provider=scripted", "k=1", "tasks=[edit-file]"], tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "home").exists()  # nothing under ~/.cache/reliability-lab
    assert entries() - before  # its configuration was remembered there (a new entry, or one rewritten)


@pytest.fixture(scope="module")
def module_scoped_env() -> dict[str, str | None]:
    # Set up before any function-scoped fixture of its first test (clean_env among them).
    return {name: os.environ.get(name) for name in ("LAB_DATA_DIR", "LAB_CACHE_DIR")}


def test_module_scoped_fixtures_get_a_temp_run_store_and_cache_dir_never_the_checkouts_or_the_users(
        module_scoped_env: dict[str, str | None], tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.getbasetemp()
    for name, value in module_scoped_env.items():
        assert value is not None, name  # unset: the checkout's runs/ or ~/.cache/reliability-lab
        assert Path(value).is_dir() and (base in Path(value).parents or base.parent in Path(value).parents), value
