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
