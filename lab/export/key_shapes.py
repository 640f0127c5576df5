"""Key shapes the secret scanner finds beside detect-secrets' plugins (SPEC C4, R4).

detect-secrets 1.5 knows a fixed set of providers. A credential reaches the
lab's files in more forms than those, so the scanner (:mod:`lab.export.secrets`)
also looks for three kinds of its own, each a pattern and a check of what it
matched:

1. **Provider prefixes** (:data:`PREFIXED_KEYS`): a documented, fixed prefix
   followed by a random body — Hugging Face ``hf_``, Groq ``gsk_``, xAI
   ``xai-``, Replicate ``r8_``, Perplexity ``pplx-``, Fireworks ``fw_``,
   Cerebras ``csk-``, Stripe test and restricted keys, GitHub's fine-grained
   PATs, Google OAuth secrets and tokens, DigitalOcean, Shopify, Databricks,
   Linear, Notion, Postman, Atlassian, Vault, Terraform Cloud, Doppler,
   Supabase, Pulumi, Grafana, Sentry, New Relic, Mailgun, Pinecone, Tavily,
   LangSmith, Together, Heroku, age, Slack app tokens, Azure AD client
   secrets, AWS session tokens, Discord webhooks and more. The body must
   look random (letters and digits, a run of 16 unbroken by ``-``/``_``), so
   ``hf_hub_download`` or ``fw_version_string`` stay.
2. **Credential assignments** (:data:`ASSIGNMENT`): a value assigned to a
   name that says it is a credential — ``aws_secret_access_key = …``
   (credentials files, quoted or not), ``MISTRAL_API_KEY=…`` (``.env``),
   ``"apiKey": "…"`` (JSON), ``x-api-key: …`` (headers), ``password: …``
   (YAML) — whatever the value's shape, when it is opaque (letters and
   digits, 16 characters or more, not a path or URL). This is how a key of a
   provider without a prefix (Azure, Mistral, Cohere) is found.
3. **Private-key body lines** (:data:`PEM_BODY_LINE`): a line of a PEM or
   OpenSSH key without its ``BEGIN`` line — what a ``grep``/``search`` of a key
   file prints, or one line of a key streamed line by line: a whole line of
   exactly 64 (PEM) or 70 (OpenSSH) base64 characters mixing upper case,
   lower case and digits (a hex digest never does), or a line starting with
   the DER/OpenSSH opening of a private key (``MIIEvQIBADAN…``, ``b3BlbnNzaC1rZXktdjE``).

Ordinary text stays: lockfile hashes (``sha512-…``, hex checksums), git SHAs,
UUIDs and hex digests outside credential assignments are not secrets
(negative cases in ``tests/export/test_key_shapes.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

Check = Callable[["re.Match[str]"], "str | None"]
"""What a shape's match holds as a secret (the value to mask), or None when it is a look-alike."""

_BODY = r"[A-Za-z0-9]"
_NOT_BEFORE = r"(?<![A-Za-z0-9_-])"

# (kind, prefix, body pattern). The body follows the prefix; the whole match is the secret. A prefix
# that does not start with a literal has its literal part in _PREFIX_HINTS.
_PREFIXES: tuple[tuple[str, str, str], ...] = (
    ("Hugging Face Token", r"hf_", r"[A-Za-z0-9]{30,}"),
    ("Hugging Face Token", r"api_org_", r"[A-Za-z0-9]{30,}"),
    ("Groq API Key", r"gsk_", r"[A-Za-z0-9]{30,}"),
    ("xAI API Key", r"xai-", r"[A-Za-z0-9]{30,}"),
    ("Replicate API Token", r"r8_", r"[A-Za-z0-9]{30,}"),
    ("Perplexity API Key", r"pplx-", r"[A-Za-z0-9]{30,}"),
    ("Fireworks API Key", r"fw_", r"[A-Za-z0-9]{20,}"),
    ("Cerebras API Key", r"csk-", r"[A-Za-z0-9]{30,}"),
    ("Pinecone API Key", r"pcsk_", r"[A-Za-z0-9_]{30,}"),
    ("Tavily API Key", r"tvly-", r"[A-Za-z0-9_-]{20,}"),
    ("LangSmith API Key", r"lsv2_(?:pt|sk)_", r"[A-Za-z0-9_]{30,}"),
    ("Together API Key", r"tgp_v1_", r"[A-Za-z0-9_-]{30,}"),
    ("Anyscale API Key", r"esecret_", r"[A-Za-z0-9]{20,}"),
    ("ElevenLabs API Key", r"sk_", r"[a-f0-9]{48}(?![A-Za-z0-9])"),
    ("Stripe Key", r"(?:sk|rk)_(?:test|live)_", r"[A-Za-z0-9]{20,}"),
    ("Stripe Webhook Secret", r"whsec_", r"[A-Za-z0-9+/=]{24,}"),
    ("Slack Token", r"xapp-", r"[0-9]-[A-Za-z0-9-]{20,}"),
    ("Slack Token", r"xox[abposre]-", r"[A-Za-z0-9-]{20,}"),
    ("GitHub Token", r"gh[pousr]_", r"[A-Za-z0-9_]{30,}"),
    ("GitLab Token", r"gl[a-z]{2,6}-", r"[A-Za-z0-9_-]{20,}"),
    ("Google OAuth Client Secret", r"GOCSPX-", r"[A-Za-z0-9_-]{24,}"),
    ("Google OAuth Token", r"ya29\.", r"[A-Za-z0-9_-]{30,}"),
    ("DigitalOcean Token", r"do[opr]_v1_", r"[a-f0-9]{64}"),
    ("Shopify Token", r"shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]{32}"),
    ("Databricks Token", r"dapi", r"[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])"),
    ("Linear API Key", r"lin_api_", r"[A-Za-z0-9]{30,}"),
    ("Notion Token", r"(?:secret_|ntn_)", r"[A-Za-z0-9]{40,}"),
    ("Postman API Key", r"PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("Atlassian API Token", r"ATATT", r"[A-Za-z0-9_=-]{40,}"),
    ("HashiCorp Vault Token", r"hv[sbr]\.", r"[A-Za-z0-9_-]{24,}"),
    ("Terraform Cloud Token", r"[A-Za-z0-9]{14}\.atlasv1\.", r"[A-Za-z0-9_=-]{40,}"),
    ("Doppler Token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.", r"[A-Za-z0-9]{30,}"),
    ("Supabase Token", r"sbp_", r"[a-f0-9]{40}"),
    ("Pulumi Token", r"pul-", r"[a-f0-9]{40}"),
    ("Grafana Token", r"(?:glsa_|glc_)", r"[A-Za-z0-9_+/=-]{30,}"),
    ("Sentry Token", r"sntry?[su]_", r"[A-Za-z0-9_+/=-]{30,}"),
    ("Docker Hub Token", r"dckr_(?:pat|oat)_", r"[A-Za-z0-9_-]{24,}"),
    ("New Relic Key", r"NR(?:AK|AA|II|JS)-", r"[A-Z0-9]{20,}"),
    ("Mailgun Key", r"key-", r"[a-f0-9]{32}(?![A-Za-z0-9])"),
    ("Heroku API Key", r"HRKU-", r"[A-Za-z0-9_-]{30,}"),
    ("Fly.io Token", r"fm[12][ar]?_", r"[A-Za-z0-9+/=_-]{30,}"),
    ("Age Secret Key", r"AGE-SECRET-KEY-1", r"[0-9A-Z]{50,}"),
    ("Azure AD Client Secret", r"[A-Za-z0-9_~.]{3}\dQ~", r"[A-Za-z0-9_~.-]{31,34}"),
    ("AWS Session Token", r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu)", r"[A-Za-z0-9+/=]{40,}"),
    ("Discord Webhook", r"discord(?:app)?\.com/api/webhooks/", r"\d{6,}/[A-Za-z0-9_-]{40,}"),
)

_PREFIX_HINTS = {r"[A-Za-z0-9]{14}\.atlasv1\.": r"\.atlasv1\.", r"[A-Za-z0-9_~.]{3}\dQ~": r"\dQ~",
                 r"discord(?:app)?\.com/api/webhooks/": r"/api/webhooks/"}

PREFIXED_KEYS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(_NOT_BEFORE + prefix + body)) for kind, prefix, body in _PREFIXES)
"""(kind, pattern) of every provider prefix; the whole match is the key."""

_CREDENTIAL_WORD = (r"(?:api[_.-]?key|apikey|access[_.-]?key|secret|token|passw(?:or)?d|passwd|pwd|credential"
                    r"|private[_.-]?key|auth[_.-]?key|account[_.-]?key|subscription[_.-]?key|client[_.-]?key"
                    r"|signing[_.-]?key|master[_.-]?key|[?&]sig|(?-i:[A-Z0-9]_KEY))")
ASSIGNMENT = re.compile(
    r"(?ai)" + _CREDENTIAL_WORD + r"([A-Za-z0-9_.-]{0,32}?)[\"']?[^\S\n]*(?::=|=>|[=:])[^\S\n]*[\"']?"
    r"([A-Za-z0-9_/+=.~-]{16,})")
"""A value assigned to a credential-named key: group 1 is the rest of the name, group 2 the value."""
ASSIGNMENT_KIND = "Credential Assignment"
_NOT_A_CREDENTIAL_NAME = re.compile(
    r"(?i)(?:ids?|s|count|type|kind|url|uri|file|path|name|len|length|limit|usage|env|var|header|field|format"
    r"|size|cost|budget|per[A-Za-z_]*|ttl|expir\w*|at)$")

AWS_SECRET_KIND = "AWS Secret Access Key"
AWS_SECRET = re.compile(
    r"(?ai)secret[_.-]?(?:access)?[_.-]?key[\"']?[^\S\n]*(?::=|=>|[=:])[^\S\n]*[\"']?"
    r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])")
"""An AWS secret access key as credentials files, ``.env`` files, JSON (``SecretAccessKey``) write it."""

_DER_STARTS = (r"MII[A-Za-z0-9+/]{2}(?:QIBADAN|gIBAAKC|wIBAAKC|AIBAAKC)", "MHcCAQEE", "MC4CAQAw", "MIG2AgEA",
               "MIGHAgEA", "b3BlbnNzaC1rZXktdjE")
"""How a private key's base64 body starts: PKCS#8 and PKCS#1 RSA, SEC1 and PKCS#8 EC, Ed25519, OpenSSH."""
PEM_BODY_KIND = "Private Key"
PEM_BODY_LINE = re.compile(
    r"(?<![A-Za-z0-9+/_.-])([A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{64}|"
    r"(?:" + "|".join(_DER_STARTS) + r")[A-Za-z0-9+/]{8,})={0,2}(?![A-Za-z0-9+/=_.-])")
"""One line of a private key's base64 body: a run of base64 characters standing alone (not part of a
longer run, a base64url token, a dotted name or ``sha384-…``)."""

SHAPE_HINT = re.compile("|".join([*dict.fromkeys(_PREFIX_HINTS.get(prefix, prefix) for _, prefix, _ in _PREFIXES),
                                  r"(?<![A-Za-z0-9+/_.-])(?=[A-Za-z0-9+/]{0,69}[g-zG-Z+/])"
                                  r"(?:[A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{64})(?![A-Za-z0-9+/])", *_DER_STARTS]))
"""Finds something wherever a prefixed key or a private-key body line is: its prefix; a standalone
run of 64 or 70 base64 characters that is not hex (a sha256 digest is not a key line); a DER opening."""
WORD_HINT = re.compile(r"(?:key|secret|token|passw|pwd|credential|sig)[a-z0-9_.-]{0,48}(?:\\{0,7}[\"'])?[^\S\n]*[=:]",
                       re.ASCII)
"""Finds something in the *lower-cased* text wherever a credential assignment is: a word of the
credential names followed by the assignment (the patterns are ASCII-only and case-insensitive, so
``str.lower`` folds every case they match). A bare name such as ``inputTokens`` is not one; a
name quoted inside JSON-escaped text (``\\"SecretAccessKey\\":``) is one."""


def _key_like(body: str) -> bool:
    """Random key material: letters and digits, with a run of 16 or more unbroken by ``-``/``_``/``.``."""
    return (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
            and re.search(r"[A-Za-z0-9]{16,}", body) is not None)


def _prefixed(match: re.Match[str]) -> str | None:
    return match.group(0) if _key_like(match.group(0)) else None


def _assignment(match: re.Match[str]) -> str | None:
    """The value of a credential assignment, unless the name says it holds no credential
    (``max_tokens``, ``token_count``, ``api_key_env``) or the value is a path, a URL or a word."""
    name = match.string[match.start(): match.end(1)]
    if _NOT_A_CREDENTIAL_NAME.search(name):
        return None
    value = match.group(2).rstrip(".")
    if value.startswith(("/", "./", "~/", "../")) or "//" in value or len(value) < 16:
        return None
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return None
    return value if re.search(r"[A-Za-z0-9]{8,}", value) else None


def _aws_secret(match: re.Match[str]) -> str | None:
    value = match.group(1)
    mixed = sum(any(test(c) for c in value) for test in (str.isdigit, str.isupper, str.islower))
    return value if mixed >= 2 and not re.fullmatch(r"[0-9a-fA-F]+", value) else None


def _pem_body(match: re.Match[str]) -> str | None:
    value = match.group(1)
    if len(value) in (64, 70) and not value.startswith(("MII", "MHc", "MC4", "MIG", "b3Bl")):
        mixed = all(any(test(c) for c in value) for test in (str.isdigit, str.isupper, str.islower))
        return value if mixed else None
    return value


SHAPES: tuple[tuple[str, re.Pattern[str], Check], ...] = (
    *((kind, pattern, _prefixed) for kind, pattern in PREFIXED_KEYS),
    (AWS_SECRET_KIND, AWS_SECRET, _aws_secret),
    (ASSIGNMENT_KIND, ASSIGNMENT, _assignment),
    (PEM_BODY_KIND, PEM_BODY_LINE, _pem_body),
)
"""Every shape of this module: (kind, pattern, check of a match giving the secret or None)."""
