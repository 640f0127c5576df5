"""Planted key shapes: fake keys of every provider and credential form the lab must never write.

Every key is built at run time from its documented prefix and a body drawn
from a seeded generator, so this file holds no key (secret scanners of the
repository find nothing) and every run plants the same keys. Each entry is
``name -> (text as an agent or a file would carry it, the secret values in it)``.
"""

from __future__ import annotations

import base64
import json
import random
import string

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def _body(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """``n`` characters of ``alphabet``, mixing letters and digits when it has both (as a generated key does)."""
    mixes = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
    while True:
        body = "".join(rng.choice(alphabet) for _ in range(n))
        if not mixes or (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
            return body


def pem_private_key(rng: random.Random, *, label: str = "PRIVATE KEY") -> tuple[str, list[str]]:
    """A PKCS#8-looking PEM block (64-character lines) and its body lines."""
    der = base64.b64decode("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC") + bytes(rng.randrange(256) for _ in range(1190))
    encoded = base64.b64encode(der).decode()
    lines = [encoded[i:i + 64] for i in range(0, len(encoded), 64)]
    block = "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])
    return block, [line for line in lines if len(line) == 64]


def corpus(seed: int = 28) -> dict[str, tuple[str, list[str]]]:
    """Every planted shape: name -> (text carrying it, secret values that must not appear)."""
    rng = random.Random(seed)
    b = lambda n, alphabet=ALNUM: _body(rng, n, alphabet)  # noqa: E731 - a short local generator
    keys = {
        "huggingface": "hf_" + b(34),
        "groq": "gsk_" + b(52),
        "xai": "xai-" + b(80),
        "anthropic": "sk-ant-api03-" + b(93, ALNUM + "_-") + "AA",
        "anthropic-admin": "sk-ant-admin01-" + b(90),
        "openai-project": "sk-proj-" + b(120, ALNUM + "_-"),
        "openai-legacy": "sk-" + b(48),
        "openrouter": "sk-or-v1-" + b(64, HEX),
        "deepseek": "sk-" + b(32, HEX),
        "github-classic": "ghp_" + b(36),
        "github-oauth": "gho_" + b(36),
        "github-app": "ghs_" + b(36),
        "github-fine-grained": "github_pat_" + b(22) + "_" + b(59),
        "gitlab": "glpat-" + b(20),
        "slack-bot": "xoxb-" + b(12, string.digits) + "-" + b(13, string.digits) + "-" + b(24),
        "slack-app": "xapp-1-" + b(11) + "-" + b(13, string.digits) + "-" + b(64, HEX),
        "stripe-live": "sk_live_" + b(24),
        "stripe-test": "sk_test_" + b(99),
        "stripe-restricted": "rk_live_" + b(24),
        "google-api": "AIza" + b(35, ALNUM + "_-"),
        "google-oauth-secret": "GOCSPX-" + b(28),
        "npm": "npm_" + b(36),
        "pypi": "pypi-AgEIcHlwaS5vcmc" + b(80, ALNUM + "_-"),
        "replicate": "r8_" + b(37),
        "perplexity": "pplx-" + b(48),
        "fireworks": "fw_" + b(24),
        "cerebras": "csk-" + b(48, string.ascii_lowercase + string.digits),
        "tavily": "tvly-" + b(32),
        "pinecone": "pcsk_" + b(6) + "_" + b(60),
        "langsmith": "lsv2_pt_" + b(32, HEX) + "_" + b(10, HEX),
        "sendgrid": "SG." + b(22) + "." + b(43),
        "aws-access-key-id": "AKIA" + b(16, string.ascii_uppercase + string.digits),
        "aws-temporary-id": "ASIA" + b(16, string.ascii_uppercase + string.digits),
        "twilio": "SK" + b(32, HEX),
        "digitalocean": "dop_v1_" + b(64, HEX),
        "shopify": "shpat_" + b(32, HEX),
        "databricks": "dapi" + b(32, HEX),
        "linear": "lin_api_" + b(40),
        "notion": "ntn_" + b(46),
        "vault": "hvs." + b(90),
        "doppler": "dp.st." + b(40),
        "supabase": "sbp_" + b(40, HEX),
        "grafana": "glsa_" + b(32) + "_" + b(8, HEX),
        "heroku": "HRKU-" + b(60, ALNUM + "_-"),
        "stripe-webhook": "whsec_" + b(32),
        "jwt": ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + base64.urlsafe_b64encode(
            json.dumps({"sub": b(12), "iat": 1700000000}).encode()).decode().rstrip("=") + "." + b(43, ALNUM + "_-")),
    }
    keys["sentry-user"] = "sntryu_" + b(64, HEX)
    keys["sentry-org"] = "sntrys_" + b(80, ALNUM + "_+/=")
    keys["docker-hub"] = "dckr_pat_" + b(27, ALNUM + "_-")
    out = {name: (f"{name} key: {key}", [key]) for name, key in keys.items()}
    aws_secret = b(40, B64)
    out["aws-credentials-file"] = (f"[default]\naws_access_key_id = {keys['aws-access-key-id']}\n"
                                   f"aws_secret_access_key = {aws_secret}\n", [aws_secret, keys["aws-access-key-id"]])
    aws_quoted = b(40, B64)
    out["aws-quoted"] = (f'aws_secret_access_key = "{aws_quoted}"', [aws_quoted])
    aws_env = b(40, B64)
    out["aws-env"] = (f"export AWS_SECRET_ACCESS_KEY={aws_env}", [aws_env])
    aws_json = b(40, B64)
    out["aws-sts-json"] = (json.dumps({"Credentials": {"SecretAccessKey": aws_json}}), [aws_json])
    azure = b(32, HEX)
    out["azure-openai"] = (f"AZURE_OPENAI_API_KEY={azure}", [azure])
    azure_storage = b(86, B64) + "=="
    out["azure-storage"] = (f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={azure_storage}", [azure_storage])
    mistral = b(32)
    out["mistral"] = (f'MISTRAL_API_KEY="{mistral}"', [mistral])
    cohere = b(40)
    out["cohere-yaml"] = (f"cohere:\n  api_key: {cohere}\n", [cohere])
    together = b(64, HEX)
    out["together-header"] = (f"x-api-key: {together}", [together])
    password = b(24)
    out["basic-auth-url"] = (f"git remote add origin https://deploy:{password}@git.example.com/r.git", [password])
    block, body = pem_private_key(rng)
    out["pem-block"] = (block, body)
    rsa_block, rsa_body = pem_private_key(rng, label="RSA PRIVATE KEY")
    out["pem-body-lines"] = ("\n".join(f"keys/id_rsa:{n}: {line}" for n, line in enumerate(rsa_body, 2)), rsa_body)
    gcp_block, gcp_body = pem_private_key(rng)
    gcp_key_id = b(40, HEX)
    out["gcp-service-account"] = (json.dumps({"type": "service_account", "private_key_id": gcp_key_id,
                                              "private_key": gcp_block + "\n",
                                              "client_email": "svc@proj.iam.gserviceaccount.com"}, indent=2),
                                  gcp_body)  # the key id names the key, it is not secret
    return out


def secrets_of(entries: dict[str, tuple[str, list[str]]]) -> list[str]:
    """Every secret value planted by ``entries``."""
    return [value for _, values in entries.values() for value in values]
