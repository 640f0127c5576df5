"""httpx client options for calls to a provider, from the injected environment only.

The lab never lets httpx read the process environment (``trust_env=False``):
CA files (``SSL_CERT_FILE``/``SSL_CERT_DIR``) and proxies
(``*_proxy``/``NO_PROXY``) come from the ``env`` mapping a run was given, so
a test or a run sees exactly the settings it was handed. Used by the
OpenAI-compatible provider and by the preflight.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from lab.errors import ConfigError

LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}


def client_options(env: Mapping[str, str], url: str,
                    transport: httpx.BaseTransport | None) -> dict[str, Any]:
    """httpx.Client keyword arguments taken from the injected ``env`` only."""
    options: dict[str, Any] = {"trust_env": False, "follow_redirects": False}
    if transport is not None:
        options["transport"] = transport
        return options
    cafile, cadir = env.get("SSL_CERT_FILE") or None, env.get("SSL_CERT_DIR") or None
    if cafile or cadir:
        try:
            options["verify"] = _tls_context(cafile, cadir)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"SSL_CERT_FILE={cafile!r} / SSL_CERT_DIR={cadir!r}: cannot load CA certificates: {exc}"
            ) from exc
    proxy = proxy_for(env, url)
    if proxy:
        options["proxy"] = proxy
    return options


def proxy_for(env: Mapping[str, str], url: str) -> str | None:
    """The proxy for ``url`` per the usual ``*_proxy`` / ``NO_PROXY`` variables."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host in LOOPBACK_HOSTS:
        return None
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    entries = [e.strip().lower() for e in no_proxy.split(",") if e.strip()]
    if "*" in entries:
        return None
    for entry in (e.lstrip("*").lstrip(".") for e in entries):
        if host == entry or host.endswith("." + entry):
            return None
    for key in (f"{parts.scheme}_proxy", "all_proxy"):
        value = env.get(key) or env.get(key.upper())
        if value:
            return value
    return None


@functools.lru_cache(maxsize=8)
def _tls_context(cafile: str | None, cadir: str | None) -> ssl.SSLContext:
    """One TLS context per CA file/directory and process: loading a CA bundle costs ~0.1–0.4 s
    of CPU, which a live run would otherwise pay on every model call."""
    return ssl.create_default_context(cafile=cafile, capath=cadir)
