"""Validate files the lab produced against the schemas it ships."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from lab.schemas import load_schema


def assert_valid(name: str, document: Any, where: str = "") -> None:
    """Fail with the field path when ``document`` does not match schema ``name``."""
    errors = sorted(jsonschema.Draft202012Validator(load_schema(name)).iter_errors(document),
                    key=lambda e: list(e.absolute_path))
    assert not errors, f"{where}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])


def assert_jsonl_valid(name: str, path: Path) -> None:
    # JSON Lines break at "\n" only: U+2028 and friends are raw inside strings
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n")[:-1], 1):
        assert_valid(name, json.loads(line), f"{path}:{n}")
