"""Golden files: normalise, then compare with tests/golden/ or rewrite them (--update-golden)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


def normalise(text: str, *, tmp_paths: tuple[Path, ...] = ()) -> str:
    """``text`` with tmp paths replaced by ``<tmp>`` and UTC timestamps by ``<ts>``."""
    for path in sorted({str(p) for p in tmp_paths}, key=len, reverse=True):
        text = text.replace(path, "<tmp>")
    return _TIMESTAMP.sub("<ts>", text)


def check_golden(config: pytest.Config, name: str, text: str, *, tmp_paths: tuple[Path, ...] = ()) -> None:
    """Assert ``text`` (normalised) equals ``tests/golden/<name>``; rewrite it under ``--update-golden``."""
    golden = GOLDEN_DIR / name
    actual = normalise(text, tmp_paths=tmp_paths)
    if config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    assert golden.exists(), f"{golden} is missing: run pytest --update-golden and review the diff"
    expected = golden.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from {golden}; if intended, run pytest --update-golden"
