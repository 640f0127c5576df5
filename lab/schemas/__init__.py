"""JSON Schemas for every file the lab reads or writes (``<name>.schema.json``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMAS_DIR = Path(__file__).resolve().parent


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema ``lab/schemas/<name>.schema.json`` (cached)."""
    with open(SCHEMAS_DIR / f"{name}.schema.json", encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema
