"""The secret scanner (SPEC C4, E3, R4): key shapes and environment credentials, never the value.

Fake keys are built at test time by concatenation, so no key-shaped literal
lives in the repository.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable

import pytest

from lab.export.secrets import SecretHit, SecretScanner, credential_values, describe_hits, find_secrets

RNG = random.Random(20240607)


def alnum(n: int) -> str:
    """n random letters and digits, always mixing upper case, lower case and digits."""
    body = [RNG.choice(string.ascii_uppercase), RNG.choice(string.ascii_lowercase), RNG.choice(string.digits)]
    body += [RNG.choice(string.ascii_letters + string.digits) for _ in range(n - 3)]
    RNG.shuffle(body)
    return "".join(body)


def openai_key() -> str:
    return "sk-" + "proj-" + alnum(40)


def aws_key_id() -> str:
    return "AKIA" + "".join(RNG.choice(string.ascii_uppercase) for _ in range(16))


def github_token() -> str:
    return "gh" + "p_" + alnum(36)


def jwt() -> str:
    def part(obj: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return part({"alg": "HS256", "typ": "JWT"}) + "." + part({"sub": "someone"}) + "." + alnum(43)


def private_key_block() -> str:
    return "-----" + "BEGIN RSA " + "PRIVATE KEY-----\n" + alnum(64) + "\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(("make", "kind"), [
    (openai_key, "sk- API key (OpenAI/Anthropic style)"),
    (aws_key_id, "AWS Access Key"),
    (github_token, "GitHub Token"),
    (jwt, "JSON Web Token"),
    (private_key_block, "Private Key"),
])
def test_known_key_shapes_are_found_with_their_field_path(make: Callable[[], str], kind: str) -> None:
    secret = make()
    doc = {"runs": [{}, {"verifiers": [{"detail": f"stderr: boom {secret} end"}]}]}
    hits = find_secrets(doc, env={})
    assert hits == [SecretHit("runs[1].verifiers[0].detail", kind)]
    assert secret not in repr(hits) and secret not in json.dumps([h.to_json() for h in hits])
    assert secret not in describe_hits(hits)


@pytest.mark.parametrize("value", [
    hashlib.sha256(b"fixture").hexdigest(),
    str(uuid.UUID(int=RNG.getrandbits(128))),
    hashlib.sha1(b"commit").hexdigest(),
    "sha256: " + hashlib.sha256(b"x").hexdigest() + " lines: 3",
    base64.b64encode(hashlib.sha256(b"y").digest()).decode(),
    "sk-this-is-a-rather-long-kebab-case-task-slug-name",
    "the password is stored in the vault",
    "connect to 8.8.8.8 and https://api.openai.com/v1/chat/completions",
])
def test_hashes_ids_and_prose_are_not_flagged(value: str) -> None:
    assert find_secrets({"field": value, "list": [value]}, env={}) == []


def test_environment_credentials_are_found_by_exact_value() -> None:
    value = alnum(24)
    env = {"MY_SERVICE_TOKEN": value, "HOME": "/home/someone", "SHORT_KEY": "abc"}
    hits = find_secrets({"finalMessage": f"using {value} now", "other": "abc"}, env=env)
    assert hits == [SecretHit("finalMessage", "credential from $MY_SERVICE_TOKEN")]


@pytest.mark.parametrize("name", ["A_KEY", "GH_TOKEN", "CLIENT_SECRET", "DB_PASSWORD", "lower_api_key"])
def test_credential_variable_suffixes(name: str) -> None:
    assert name in credential_values({name: "x" * 8})
    assert credential_values({name: "x" * 7}) == {}


def test_a_named_api_key_env_is_a_credential_whatever_its_name() -> None:
    value = alnum(16)
    assert find_secrets({"a": value}, env={"PROVIDER_CREDENTIAL": value}) == []
    hits = find_secrets({"a": value}, env={"PROVIDER_CREDENTIAL": value}, credential_env=["PROVIDER_CREDENTIAL"])
    assert hits == [SecretHit("a", "credential from $PROVIDER_CREDENTIAL")]


def test_a_secret_in_an_object_key_never_appears_in_a_field_path() -> None:
    secret = openai_key()
    hits = SecretScanner(env={}).scan({"headers": {secret: "Bearer " + secret}})
    # the key itself, and its value (an sk- key, also a bearer token)
    assert [h.field for h in hits] == ["headers{key 0}"] * 3
    assert all(secret not in h.field for h in hits)


def test_field_paths_quote_keys_that_are_not_identifiers() -> None:
    hits = find_secrets({"verifiers": {"a b": aws_key_id()}}, env={})
    assert hits == [SecretHit("verifiers['a b']", "AWS Access Key")]


def test_scan_prefix_and_bare_strings() -> None:
    scanner = SecretScanner(env={})
    assert scanner.scan(aws_key_id()) == [SecretHit("", "AWS Access Key")]
    assert scanner.scan([1, None, True, aws_key_id()], field="line[3]") == [SecretHit("line[3][3]", "AWS Access Key")]


def test_describe_hits_is_one_line_and_bounded() -> None:
    hits = [SecretHit(f"runs[{i}].detail", "AWS Access Key") for i in range(7)]
    text = describe_hits(hits, limit=2)
    assert text == "runs[0].detail (AWS Access Key); runs[1].detail (AWS Access Key); and 5 more"
