"""The endpoint identity and the store key: what keys a run besides the config hash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.config.identity import (
    endpoint_identity,
    endpoint_key,
    endpoint_url,
    runtime_differences,
    runtime_settings,
    store_key,
)
from lab.store import is_plain_name
from tests.helpers.composed import composed

# One worker for the module: the base compositions are shared by its tests.
pytestmark = pytest.mark.xdist_group("config-identity")


def key_of(*overrides: str) -> str:
    config = composed("suite=core", *overrides)
    return endpoint_key(endpoint_identity(config.data["provider"], config.mode))


OPENAI = ("provider=openai", "provider.base_url=http://127.0.0.1:18080/v1")


@pytest.mark.parametrize("change", [
    "provider.base_url=http://127.0.0.1:18081/v1",   # another port
    "provider.base_url=http://localhost:18080/v1",   # another host
    "provider.base_url=https://127.0.0.1:18080/v1",  # another scheme
    "provider.base_url=http://127.0.0.1:18080/v2",   # another path
    "provider=scripted",                             # another provider kind
])
def test_another_endpoint_is_another_identity(change: str) -> None:
    assert key_of(*OPENAI, change) != key_of(*OPENAI)


RUNTIME_CHANGES = ("provider.stream=false", "provider.timeout_s=5", "provider.max_retries=0",
                   "provider.max_response_bytes=1048576", "provider.api_key_env=OTHER_KEY", "jobs=8",
                   "+provider.headers.X-Title=lab")


def test_runtime_settings_and_credentials_are_not_identity() -> None:
    """All of them at once (none names the endpoint), each seen to take effect."""
    config = composed("suite=core", *OPENAI, *RUNTIME_CHANGES)
    base = composed("suite=core", *OPENAI)
    changed = {key: value for key, value in runtime_settings(config.data).items()
               if value != runtime_settings(base.data)[key]}
    assert changed == {"provider.stream": False, "provider.timeout_s": 5.0, "provider.max_retries": 0,
                       "provider.max_response_bytes": 1048576, "jobs": 8}
    assert config.data["provider"]["api_key_env"] == "OTHER_KEY"
    assert config.data["provider"]["headers"] == {"X-Title": "lab"}
    assert key_of(*OPENAI, *RUNTIME_CHANGES) == key_of(*OPENAI)


@pytest.mark.parametrize("change", [
    "provider.base_url=http://127.0.0.1:18080/v1/",                 # a trailing slash
    "provider.base_url='http://127.0.0.1:18080/v1?x=1#f'",  # query, fragment (credentials are refused)
])
def test_the_spelling_of_the_same_endpoint_is_not_identity(change: str) -> None:
    assert key_of(*OPENAI, change) == key_of(*OPENAI)


def test_replay_is_keyed_by_its_cassettes_not_the_provider() -> None:
    assert key_of("mode=replay") == key_of("mode=replay", *OPENAI) == "cassette"


def test_the_endpoint_url_has_an_explicit_port() -> None:
    assert endpoint_url("https://API.example.com/v1/") == "https://api.example.com:443/v1"
    assert endpoint_url("http://[::1]:8080/v1") == "http://[::1]:8080/v1"


def test_runtime_differences_name_recorded_and_current_values() -> None:
    recorded = [{"provider.stream": False, "jobs": 1}, {}, {"provider.stream": False, "jobs": 4}]
    current = runtime_settings({"provider": {"stream": True, "timeout_s": 120.0}, "jobs": 4})
    assert runtime_differences(recorded, current) == ["provider.stream (false -> true)", "jobs (1 -> 4)"]


SAFE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)


@given(user=SAFE, password=SAFE, query=SAFE, host=SAFE, port=st.integers(1, 65535), path=SAFE)
def test_credentials_and_queries_never_enter_the_identity(user: str, password: str, query: str, host: str,
                                                          port: int, path: str) -> None:
    bare = endpoint_url(f"http://{host}:{port}/{path}")
    full = endpoint_url(f"http://{user}:{password}@{host}:{port}/{path}?key={query}#frag-{query}")
    assert full == bare
    identity = {"provider": "openai", "endpoint": full}
    assert endpoint_key(identity) == endpoint_key({"provider": "openai", "endpoint": bare})


IDENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8).filter(
    lambda t: not t.startswith("0") or t == "0")
SEMVER = st.builds(lambda a, b, c, pre, build: f"{a}.{b}.{c}" + (f"-{pre}" if pre else "") + (f"+{build}" if build else ""),
                   st.integers(0, 999), st.integers(0, 999), st.integers(0, 999), st.none() | IDENT, st.none() | IDENT)


@given(version=SEMVER, config_hash=st.text("0123456789abcdef", min_size=64, max_size=64),
       provider=st.sampled_from(["openai", "scripted", "cassette"]), endpoint=st.none() | st.text(max_size=30),
       k=st.integers(1, 100), seed=st.integers(0, 10**6))
def test_the_store_key_and_run_id_are_plain_names(version: str, config_hash: str, provider: str,
                                                  endpoint: str | None, k: int, seed: int) -> None:
    from lab.execute.plan import run_id

    key = store_key(version, config_hash, endpoint_key({"provider": provider, "endpoint": endpoint}))
    assert is_plain_name(key)
    assert is_plain_name(run_id("core", key, k, seed))
