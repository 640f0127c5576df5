"""Canonical JSON and its sha256: the one serialisation every hash and fingerprint uses.

Sorted keys, no whitespace, UTF-8 kept as is. Used by the effective-config
hash (lab.config), cassette fingerprints (lab.replay) and run inputs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_hash(value: Any) -> str:
    """sha256 hex digest of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
