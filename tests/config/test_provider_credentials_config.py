"""Credentials reach a provider through provider.api_key_env only: never a URL, never an Authorization header."""

from __future__ import annotations

import pytest

from lab.config.compose import compose_config
from lab.errors import ConfigError
from lab.export.secrets import SecretScanner, is_credential_header


@pytest.mark.parametrize(("override", "message"), [
    ("provider.base_url=http://user:pAss0rd@127.0.0.1:9/v1", "provider.base_url: carries credentials"),
    ("+provider.headers.Authorization=Bearer abc", "provider.headers.Authorization: set the API key"),
])
def test_credentials_outside_api_key_env_are_refused_before_anything_runs(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compose_config(["suite=core", "provider=openai", override])


@pytest.mark.parametrize(("name", "credential"), [
    ("Authorization", True), ("x-api-key", True), ("X-Gateway-Token", True), ("x-session-id", True),
    ("Cookie", True), ("X-Client-Secret", True), ("X-Title", False), ("HTTP-Referer", False),
])
def test_header_names_that_carry_credentials(name: str, credential: bool) -> None:
    assert is_credential_header(name) is credential


def test_a_credential_header_is_dropped_whatever_its_value_looks_like() -> None:
    kept, dropped = SecretScanner(env={}).safe_headers({"X-Gateway-Token": "short", "X-Title": "lab"})
    assert (kept, dropped) == ({"X-Title": "lab"}, ["X-Gateway-Token"])


@pytest.mark.parametrize("key", ["sk-custom-abcdefghijklmnopqrstuv0123456789", "sk-live-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"])
def test_lowercase_sk_keys_are_found(key: str) -> None:
    assert SecretScanner(env={}).findings(f"key={key}")


def test_a_kebab_case_slug_is_not_a_key() -> None:
    assert not SecretScanner(env={}).findings("see sk-learn-model-selection-cross-validation-guide")
