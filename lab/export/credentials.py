"""Credentials known by their name: environment variables and request headers (SPEC C4).

What the secret scanner (:mod:`lab.export.secrets`) finds without looking at a
value's shape, and what the lab needs before it has any document to scan:
which headers are never written, and which environment values must never
appear in what it writes. Cheap to import (no detect-secrets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

CREDENTIAL_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_CREDENTIAL_CHARS = 8

# Headers that carry credentials: never written anywhere (RFC 9110 Authorization, Azure api-key,
# Anthropic x-api-key, Google x-goog-api-key, cookies).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key",
                                "x-goog-api-key", "cookie", "set-cookie"})
CREDENTIAL_NAME = re.compile(r"(?i)(key|token|secret|auth|passw|session|cookie|credential|signature)")


def is_credential_header(name: str) -> bool:
    """Whether a header's *name* says it carries a credential (``authorization``, ``x-api-key``,
    ``X-Gateway-Token``, ``x-session-id`` …): such a value is never written, whatever it looks like."""
    return name.lower() in CREDENTIAL_HEADERS or CREDENTIAL_NAME.search(name) is not None


def credential_values(env: Mapping[str, str], names: Iterable[str] = ()) -> dict[str, str]:
    """Credential values in ``env``: variable name -> value.

    Args:
        env: the environment (``os.environ`` or a test mapping).
        names: extra variable names that hold credentials (``api_key_env``).

    Returns:
        Every variable named in ``names`` or ending in ``_KEY``, ``_TOKEN``,
        ``_SECRET`` or ``_PASSWORD`` (any case) whose value has at least
        8 characters after stripping whitespace.
    """
    wanted = set(names)
    return {name: value.strip() for name, value in env.items()
            if (name in wanted or name.upper().endswith(CREDENTIAL_SUFFIXES))
            and len(value.strip()) >= MIN_CREDENTIAL_CHARS}
