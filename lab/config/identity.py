"""What a run measured besides the effective configuration: the endpoint, and the suite version.

The effective-config hash (:mod:`lab.config.compose`) covers what the harness
sends and how it acts. Two more things decide which system a number
describes, and together with the hash they key the run store and the run id:

- the **endpoint identity**: the provider's kind and, for a provider that
  answers over HTTP, its endpoint as scheme, host, port and path. The same
  model name on two servers is not the same measured system (weights,
  quantisation, system prompts, routing). Credentials, user info, query
  strings, fragments and header values never enter it. In replay the
  cassette answers, whatever ``provider`` says, so the identity is
  ``cassette`` (the cassette's sha256 already keys each replayed run);
- the **suite version**, so a newer suite never overwrites an older baseline.

Shapes::

    endpoint_identity(...) -> {"provider": "openai", "endpoint": "http://127.0.0.1:18080/v1"}
                              {"provider": "scripted", "endpoint": None}
                              {"provider": "cassette", "endpoint": None}      # mode=replay
    endpoint_key(identity)  -> "openai-3f2a9c1e" | "scripted" | "cassette"
    store_key("1.0.0", cfg_hash, "openai-3f2a9c1e") -> "v1.0.0.<cfg12>.openai-3f2a9c1e"

Why a second identity and not the hash: the hash stays "what the harness
sends", so the same configuration measured on two endpoints has one hash
and ``lab compare`` pairs the two reports as a comparison of endpoints,
while the store keeps them apart (``docs/configuration.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from lab.canonical import canonical_hash

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

# Provider keys that change how a call is made but not what is measured. A
# difference from the recorded runs is reported ("up to date: … is a runtime
# setting"), never a reason to run again.
RUNTIME_PROVIDER_KEYS = ("stream", "timeout_s", "max_retries", "max_response_bytes", "max_concurrent_calls")
RUNTIME_KEYS = ("jobs",)


def endpoint_url(base_url: str) -> str:
    """``base_url`` reduced to scheme://host:port/path (lower-case scheme and host, explicit port).

    User info, query string and fragment are dropped; a trailing ``/`` of the
    path is ignored. A URL without a host is returned as its scheme and path.
    """
    parts = urlsplit(base_url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: keep the text, the provider refuses it
        port = None
    where = f"{host}:{port}" if port else host
    return f"{scheme}://{where}{parts.path.rstrip('/')}"


def endpoint_identity(provider: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The provider kind and endpoint a run measures (see the module docstring).

    Args:
        provider: the resolved ``provider`` config group (``name``, ``base_url`` …).
        mode: ``live``, ``record`` or ``replay``.
    """
    if mode == "replay":
        return {"provider": "cassette", "endpoint": None}
    base_url = provider.get("base_url")
    endpoint = endpoint_url(base_url) if provider.get("name") != "scripted" and base_url else None
    return {"provider": str(provider.get("name")), "endpoint": endpoint}


def endpoint_key(identity: Mapping[str, Any]) -> str:
    """A short, plain name for an endpoint identity: ``<provider>`` or ``<provider>-<8 hex>``."""
    name = _UNSAFE.sub("_", str(identity.get("provider")))
    if identity.get("endpoint") is None:
        return name
    return f"{name}-{canonical_hash(dict(identity))[:8]}"


def store_key(suite_version: str, config_hash: str, endpoint: str) -> str:
    """The run-store directory of one suite version, configuration and endpoint.

    ``v<suite version>.<config hash, 12 hex>.<endpoint key>``; characters
    outside ``[A-Za-z0-9._-]`` of the version become ``_``.
    """
    return f"v{_UNSAFE.sub('_', suite_version)}.{config_hash[:12]}.{endpoint}"


def runtime_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime settings of a resolved configuration, by dotted key (saved in each run record)."""
    provider = data.get("provider") or {}
    values = {f"provider.{key}": provider.get(key) for key in RUNTIME_PROVIDER_KEYS}
    values.update({key: data.get(key) for key in RUNTIME_KEYS})
    values["executor"] = (data.get("executor") or {}).get("name", "local")
    return values


def runtime_differences(recorded: Iterable[Mapping[str, Any]], current: Mapping[str, Any]) -> list[str]:
    """Runtime settings of ``current`` that differ from those recorded runs were made with,
    as ``key (recorded -> current)``, each key once, in ``current``'s order.

    Args:
        recorded: the ``runtime`` blocks of run records (records without one are skipped).
        current: :func:`runtime_settings` of this command.
    """
    found: dict[str, Any] = {}
    for settings in recorded:
        for key, value in current.items():
            if key in settings and settings[key] != value and key not in found:
                found[key] = settings[key]
    return [f"{key} ({_show(old)} -> {_show(current[key])})" for key, old in found.items()]


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "null" if value is None else str(value)
