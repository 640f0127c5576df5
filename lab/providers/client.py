"""httpx client options for calls to a provider, from the injected environment only.

The lab never lets httpx read the process environment (``trust_env=False``):
CA files (``SSL_CERT_FILE``/``SSL_CERT_DIR``) and proxies
(``*_proxy``/``NO_PROXY``) come from the ``env`` mapping a run was given, so
a test or a run sees exactly the settings it was handed. Used by the
OpenAI-compatible provider and by the preflight.

``shared_client`` hands every run of a process the same ``httpx.Client`` (one
connection pool, one TLS context) per distinct setup: a live run's calls, and
the next run's, reuse open connections instead of building a client and a
connection per call. httpx's pool is thread-safe (``jobs=N`` threads share it).
Its transport carries the call deadline down to every socket operation
(:mod:`lab.providers.deadline`).
"""

from __future__ import annotations

import functools
import ssl
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from lab.cleanup import at_exit
from lab.errors import ConfigError
from lab.providers.deadline import guard_transport

LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}
# No cap on connections: ``jobs=N`` runs call at once and must not queue for the pool; idle
# connections are dropped after httpx's default 5 s (below the usual server keep-alive).
POOL_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=5.0)

_clients: dict[tuple[str | None, str | None, str | None], httpx.Client] = {}
_clients_lock = threading.Lock()


def shared_client(env: Mapping[str, str], url: str) -> httpx.Client:
    """The process's pooled client for calls to ``url`` with ``env``'s CA files and proxy.

    Clients are keyed by what makes them differ (``SSL_CERT_FILE``,
    ``SSL_CERT_DIR``, the proxy for ``url``), created on first use and closed
    at exit. Pass each call's timeout on the request (``timeout=``).

    Raises:
        ConfigError: the CA files cannot be loaded.
    """
    key = (env.get("SSL_CERT_FILE") or None, env.get("SSL_CERT_DIR") or None, proxy_for(env, url))
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            options = client_options(env, url, None)
            # The transport is built here, not by httpx.Client, so its network backend can carry the
            # call deadline (lab.providers.deadline); a proxy goes through the same transport.
            transport = guard_transport(httpx.HTTPTransport(
                verify=options.pop("verify", True), proxy=options.pop("proxy", None), limits=POOL_LIMITS))
            client = httpx.Client(transport=transport, **options)
            if not _clients:
                at_exit(close_clients)
            _clients[key] = client
        return client


def close_clients() -> None:
    """Close every pooled client and its connections (at exit; later calls open new ones)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


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
