"""Preflight: check a provider can answer before the first run of an eval.

A missing API key or an unreachable endpoint would otherwise be found once
per run, and stop the eval after three infrastructure errors with most runs
never attempted. :func:`preflight` finds both with no run started: the key's
environment variable is read, then one cheap request (``GET <base_url>/models``)
is sent with a short timeout. Any HTTP answer other than 401/403 proves the
endpoint is there (some OpenAI-compatible servers have no ``/models``).
When the answer is a model list (``{"data": [{"id": …}, …]}``, read up to
``MAX_LIST_BYTES`` within the same timeout) that does not hold the configured
``provider.model``, the eval stops before any run (exit 1) with one line
naming the listed models: every run would otherwise either fail at the
server or, with a server that serves one model whatever it is asked for, be
reported under a model name that is not what answered. An empty list, a
body that is not a list, one too large or too slow is not judged.
The scripted provider needs nothing and is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lab.errors import ConfigError, ProviderAuthError, ProviderError

PREFLIGHT_TIMEOUT_S = 5.0
MAX_LIST_BYTES = 8 * 1024 * 1024
"""The largest ``/models`` body read for the model check (OpenRouter's list is about 1 MiB)."""
NAMED_MODELS = 8
"""How many listed models the one-line error names before "and N more"."""

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
        ConfigError: the endpoint lists its models and ``model`` is not
            among them (one line naming them, ``provider.model=`` and
            ``preflight=false``).
    """
    if settings.get("name") != "openai":
        return
    key_env = str(settings.get("api_key_env") or "OPENAI_API_KEY")
    key = env.get(key_env, "").strip()
    if not key:
        raise ConfigError(f"provider openai: {key_env} is not set; {NO_KEY_HINT}")
    base_url = str(settings.get("base_url") or "").rstrip("/")
    status, listed = _get_models(base_url, key, env, timeout_s, dict(settings.get("headers") or {}))
    if status in (401, 403):
        raise ProviderAuthError(f"provider openai: {base_url}/models: HTTP {status}: the key in {key_env} "
                                "was refused")
    model = str(settings.get("model") or "")
    if listed and model not in listed:
        raise ConfigError(unlisted_model_message(model, listed, f"{base_url}/models"))


def unlisted_model_message(model: str, listed: list[str], url: str) -> str:
    """The one line for a configured model the endpoint does not list (at most ``NAMED_MODELS`` named)."""
    names = ", ".join(listed[:NAMED_MODELS])
    more = f" and {len(listed) - NAMED_MODELS} more" if len(listed) > NAMED_MODELS else ""
    return (f"provider openai: model {model!r} is not among the models {url} lists ({names}{more}); "
            f"set provider.model=<one of them> (or preflight=false to run anyway)")


def listed_models(body: bytes) -> list[str] | None:
    """The model ids of an OpenAI ``/models`` answer (``{"data": [{"id": …}]}``), in its order;
    None when ``body`` is not such a list or lists none."""
    from lab.files import loads_json

    try:
        doc = loads_json(body)
    except (ValueError, UnicodeDecodeError):
        return None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    ids = [item["id"] for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]
    return ids or None


class _ListTooLong(Exception):
    """The model list decodes past ``MAX_LIST_BYTES`` (a compression bomb stops there too)."""


def _get_models(base_url: str, key: str, env: Mapping[str, str], timeout_s: float,
                headers: Mapping[str, str] | None = None) -> tuple[int, list[str] | None]:
    """(HTTP status, listed model ids or None) of ``GET <base_url>/models``; raises ProviderError
    when nothing answers. The body is read only after a 200, up to ``MAX_LIST_BYTES`` and until
    ``timeout_s`` after the request started: a larger or slower list is not judged."""
    import time

    import httpx

    from lab.providers.client import shared_client
    from lab.providers.deadline import call_deadline
    from lab.providers.decoding import ACCEPT_ENCODING
    from lab.providers.transfer import capped

    url = f"{base_url}/models"
    try:
        # The runs' pooled client (lab.providers.client): its set-up is paid once per process.
        client = shared_client(env, url)
        # The status line proves the endpoint; the body (the model list) is read within a deadline,
        # so a server that streams or trickles it cannot hold the preflight much past its timeout.
        sent = {**(headers or {}), "Authorization": f"Bearer {key}", "Accept-Encoding": ACCEPT_ENCODING}
        deadline = time.monotonic() + timeout_s
        # call_deadline: headers trickling in or "100 Continue" repeated end at timeout_s too.
        with call_deadline(timeout_s), \
                client.stream("GET", url, headers=sent, timeout=httpx.Timeout(timeout_s)) as response:
            if response.status_code != 200:
                return response.status_code, None
            body = bytearray()
            try:
                for chunk in capped(response, MAX_LIST_BYTES, _ListTooLong).iter_bytes():
                    body += chunk
                    if time.monotonic() > deadline:
                        return response.status_code, None
            except (httpx.HTTPError, _ListTooLong):
                return response.status_code, None  # the status line answered; the list is not judged
            return response.status_code, listed_models(bytes(body))
    except httpx.HTTPError as exc:
        reason = str(exc).replace(key, "<redacted>") or type(exc).__name__
        raise ProviderError(f"provider openai: cannot reach {url}: {reason}; check OPENAI_BASE_URL or "
                            "provider.base_url (skip this check with preflight=false)",
                            cause="connect") from None
