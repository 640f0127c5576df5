"""Preflight: check a provider can answer before the first run of an eval.

A missing API key or an unreachable endpoint would otherwise be found once
per run, and stop the eval after three infrastructure errors with most runs
never attempted. :func:`preflight` finds both with no run started: the key's
environment variable is read, then one cheap request (``GET <base_url>/models``)
is sent with a short timeout. Any HTTP answer other than 401/403 proves the
endpoint is there (some OpenAI-compatible servers have no ``/models``).
The scripted provider needs nothing and is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lab.errors import ConfigError, ProviderAuthError, ProviderError

PREFLIGHT_TIMEOUT_S = 5.0

NO_KEY_HINT = ("to get a result without a paid API: mode=replay (the harness alone, from cassettes), "
               "provider=scripted (a self-check with fixed answers), or a local OpenAI-compatible server "
               "(OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=dummy)")


def preflight(settings: Mapping[str, Any], env: Mapping[str, str], *,
              timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """Check the provider configured by ``settings`` (the ``provider`` config group).

    Args:
        settings: ``name``, and for ``openai`` ``base_url`` and ``api_key_env``.
        env: environment holding the key, CA files and proxies.
        timeout_s: connect and read timeout of the one request, in seconds.

    Raises:
        ConfigError: the key's variable is unset or empty (one line naming it
            and the three ways to run without a paid API).
        ProviderAuthError: the endpoint refused the key (HTTP 401/403).
        ProviderError: the endpoint cannot be reached (connection refused,
            DNS, TLS, timeout); names the URL and ``preflight=false``.
    """
    if settings.get("name") != "openai":
        return
    key_env = str(settings.get("api_key_env") or "OPENAI_API_KEY")
    key = env.get(key_env, "").strip()
    if not key:
        raise ConfigError(f"provider openai: {key_env} is not set; {NO_KEY_HINT}")
    base_url = str(settings.get("base_url") or "").rstrip("/")
    status = _get_models(base_url, key, env, timeout_s, dict(settings.get("headers") or {}))
    if status in (401, 403):
        raise ProviderAuthError(f"provider openai: {base_url}/models: HTTP {status}: the key in {key_env} "
                                "was refused")


def _get_models(base_url: str, key: str, env: Mapping[str, str], timeout_s: float,
                headers: Mapping[str, str] | None = None) -> int:
    """HTTP status of ``GET <base_url>/models``; raises ProviderError when nothing answers."""
    import httpx

    from lab.providers.client import shared_client

    url = f"{base_url}/models"
    try:
        # The runs' pooled client (lab.providers.client): its set-up is paid once per process.
        client = shared_client(env, url)
        # Only the status line counts: the body is never read, so a server that
        # streams or trickles it cannot hold the preflight past its timeout.
        sent = {**(headers or {}), "Authorization": f"Bearer {key}"}  # the gateway's headers too
        with client.stream("GET", url, headers=sent, timeout=httpx.Timeout(timeout_s)) as response:
            return response.status_code
    except httpx.HTTPError as exc:
        reason = str(exc).replace(key, "<redacted>") or type(exc).__name__
        raise ProviderError(f"provider openai: cannot reach {url}: {reason}; check OPENAI_BASE_URL or "
                            "provider.base_url (skip this check with preflight=false)",
                            cause="connect") from None
