"""Find secrets in a document before it leaves the lab (SPEC C4, E3, R4).

Two kinds of evidence:

1. **Known key shapes**, found by detect-secrets' keyword-free, regex-based
   plugins (AWS, GitHub, GitLab, Slack, Stripe, OpenAI legacy keys, private
   key blocks, JWTs, basic-auth URLs, …) plus one pattern of our own for
   current ``sk-…`` keys (OpenAI ``sk-proj-…``, Anthropic ``sk-ant-…``),
   which detect-secrets 1.5 only knows in the legacy ``…T3BlbkFJ…`` form.
2. **The exact credentials in the environment**: the value of every variable
   whose name ends in ``_KEY``, ``_TOKEN``, ``_SECRET`` or ``_PASSWORD``, or
   that a caller names (a provider's ``api_key_env``), when at least 8
   characters long.

False positives are kept low on purpose: our records are full of sha256
hex digests and ids, so the high-entropy-string plugins are off, as are the
keyword plugin (flags prose such as ``password = …`` in fixtures), the
public-IP plugin (not a credential) and the Artifactory plugin (its
"password" shape matches ordinary upper-case words). Plugins are called
directly (``analyze_string``), not through detect-secrets' global settings,
so a scan is thread-safe and changes no global state; detect-secrets' own
heuristic filters (sequential strings, UUIDs, templates, ``$VAR``) still
apply to each candidate.

A hit names the field (JSON path such as ``runs[1].verifiers[0].detail``) and
the kind of secret, never the value. The scanner serves the export bundle and
the cassette writer alike: build one :class:`SecretScanner` per document
stream and call :meth:`SecretScanner.scan` per document (or line).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

# Re-exported: what the scanner looks for by name (lab.export.credentials, cheap to import).
from lab.export.credentials import CREDENTIAL_HEADERS as CREDENTIAL_HEADERS
from lab.export.credentials import CREDENTIAL_NAME as CREDENTIAL_NAME
from lab.export.credentials import CREDENTIAL_SUFFIXES as CREDENTIAL_SUFFIXES
from lab.export.credentials import credential_values, is_credential_header
from lab.export.escapes import spellings, unescaped
from lab.export.key_shapes import ASSIGNMENT_KIND, PEM_BODY_KIND, SHAPE_HINT, SHAPES, WORD_HINT
from lab.export.linear_scan import linear_denylist, mask_spans, matched_values, may_match, required_literals

if TYPE_CHECKING:
    from detect_secrets.plugins.base import RegexBasedDetector


@cache
def key_shape_plugins() -> tuple[type[RegexBasedDetector], ...]:
    """detect-secrets' keyword-free, regex-based plugins the scanner runs (imported on first use:
    ``import lab.export.secrets`` alone, for :func:`is_credential_header`, stays cheap)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    return (AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector, DiscordBotTokenDetector,
            GitHubTokenDetector, GitLabTokenDetector, JwtTokenDetector, MailchimpDetector, NpmDetector,
            OpenAIDetector, PrivateKeyDetector, PypiTokenDetector, SendGridDetector, SlackDetector,
            SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector, TwilioKeyDetector)


SK_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{32,}")
SK_KIND = "sk- API key (OpenAI/Anthropic style)"
MASKED_KIND = "Masked API Key"
# Shapes detect-secrets 1.5 misses: (kind, pattern; group 1 is the secret when present).
EXTRA_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("GitHub Token", re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}")),
    ("Google API Key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    ("Bearer Token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})")),
    # One scheme character before "://", not the whole scheme: a match can start only at "://",
    # so a long run of letters costs one pass, not one pass per letter (quadratic).
    # The user may be empty (redis://:password@host).
    ("Basic Auth Credentials", re.compile(r"[A-Za-z0-9+.-]://[^\s:/@\"'<>]*:([^\s/@\"'<>]+)@")),
    ("NPM Token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    # A key as providers echo it in a 401 body: a visible prefix, a run of asterisks, a visible
    # suffix ("Incorrect API key provided: sk-proj-****…abcd"; DeepSeek shows no prefix: "****abcd").
    # The four asterisks are literal, so the shape hint looks for "****" alone; the bounded prefix
    # keeps each start's attempt short.
    (MASKED_KIND, re.compile(r"(?<![A-Za-z0-9_*-])(?:[A-Za-z0-9][A-Za-z0-9_-]{0,23})?\*\*\*\*\**"
                             r"[A-Za-z0-9_-]{2,8}(?![A-Za-z0-9_*-])")),
    # Provider prefixes, credential assignments, private-key body lines (lab.export.key_shapes).
    *((kind, pattern) for kind, pattern, _ in SHAPES),
)
SHAPE_CHECKS = {pattern: check for _, pattern, check in SHAPES}
"""What each shape of :mod:`lab.export.key_shapes` matched holds as a secret (or None)."""
PRIVATE_KEY_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
                               r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)
IDENTIFIER_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")


@dataclass(frozen=True)
class SecretHit:
    """One likely secret in a document; never carries the value.

    Attributes:
        field: JSON path of the string holding it (``runs[1].verifiers[0].detail``;
            ``""`` for a bare string; ``<path>{key <i>}`` when the i-th key of an
            object holds it).
        kind: what it looks like (a detect-secrets type such as ``AWS Access Key``,
            or ``credential from $OPENAI_API_KEY``).
    """

    field: str
    kind: str

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "kind": self.kind}


class SecretScanner:
    """Scans JSON-able documents for key shapes and environment credentials.

    Args:
        env: the environment whose credentials must not appear.
        credential_env: extra variable names holding credentials (a
            provider's ``api_key_env``), whatever their suffix.
    """

    def __init__(self, *, env: Mapping[str, str], credential_env: Iterable[str] = ()) -> None:
        self._credentials = sorted(credential_values(env, credential_env).items())
        # Found in a string wherever a credential value or a key shape is: a string it finds
        # nothing in is clean (one search), which most strings of a document are.
        self._suspect_pattern = re.compile("|".join([_shape_hint().pattern,
                                                     *(re.escape(value) for _, value in self._credentials)]))
        self._plugins = [plugin() for plugin in key_shape_plugins()]
        for plugin in self._plugins:  # this instance's patterns (the class keeps detect-secrets' own)
            setattr(plugin, "denylist", linear_denylist(plugin.denylist))  # a class attribute in each plugin

    def _suspect(self, text: str) -> bool:
        """False when ``text`` surely holds no secret: no key shape (:func:`may_hold_key`), no credential."""
        return self._suspect_pattern.search(text) is not None or WORD_HINT.search(text.lower()) is not None

    def scan(self, document: Any, *, field: str = "") -> list[SecretHit]:
        """Every hit in ``document`` (dicts, lists, strings, scalars), in document order.

        Args:
            document: a JSON-able value; strings are scanned line by line,
                object keys as well as values.
            field: the JSON path of ``document`` itself (prefix of every hit).

        Returns:
            Hits, one per (field, kind), in document order; [] when clean.
        """
        hits: list[SecretHit] = []
        self._walk(document, field, hits)
        return hits

    def _walk(self, value: Any, path: str, hits: list[SecretHit]) -> None:
        """Append the hits of ``value`` at ``path``, keys included, in document order."""
        if isinstance(value, str):
            hits.extend(SecretHit(path, kind) for kind in self.kinds(value))
        elif isinstance(value, dict):
            for index, (key, item) in enumerate(value.items()):
                key_kinds = self.kinds(str(key))
                hits.extend(SecretHit(f"{path}{{key {index}}}", kind) for kind in key_kinds)
                # A key that holds a secret must not appear in the path of its children.
                child = f"{path}{{key {index}}}" if key_kinds else _child(path, str(key))
                self._walk(item, child, hits)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                self._walk(item, f"{path}[{index}]", hits)

    def kinds(self, text: str) -> list[str]:
        """The kinds of secret found in one string (sorted, unique); [] when clean."""
        return sorted({kind for kind, _ in self.findings(text)})

    def findings(self, text: str) -> list[tuple[str, str]]:
        """(kind, secret value) of every secret in one string; [] when clean.

        Lines are scanned one by one (any line break, so no shape spans two
        lines). A text holding JSON string escapes (``\\"``, ``\\n``, ``\\\\``) is
        also scanned unescaped, up to :data:`lab.export.escapes.ESCAPE_LEVELS` levels (a key in a
        tool call's arguments inside a stream event, a PEM body inside a
        JSON string); a secret found there is reported as it is spelled in
        ``text`` (each spelling found), so :meth:`redact_text` masks it.
        """
        found = set(self.text_findings(text))
        for variant in unescaped(text):
            for kind, value in self.text_findings(variant):
                spelled = [form for form in spellings(value) if form in text]
                # A spelling not rebuilt here is still reported, so the last guard refuses it.
                found.update((kind, form) for form in spelled or [value])
        return sorted(found)

    def text_findings(self, text: str) -> list[tuple[str, str]]:
        """:meth:`findings` of ``text`` as it is, escapes not looked through."""
        found = {(f"credential from ${name}", value) for name, value in self._credentials if value in text}
        if not may_hold_key(text):  # no key shape anywhere: the common case, two searches
            return sorted(found)
        found.update(("Private Key", m.group(0)) for m in PRIVATE_KEY_BLOCK.finditer(text))
        for line in text.splitlines() or [text]:
            if may_hold_key(line):
                found.update(self._line_findings(line))
        return sorted(found)

    def _line_findings(self, line: str, *, gated: bool = True) -> set[tuple[str, str]]:
        """The findings of one line; ``gated``: skip a plugin none of whose patterns' required
        literals are all in the line (:func:`required_literals`; exact, and it keeps patterns
        such as npm's ``//.+/:_authToken=`` off the long lines where they cost quadratic time)."""
        found: set[tuple[str, str]] = set()
        for plugin in self._plugins:
            if gated and not any(may_match(pattern, line) for pattern in plugin.denylist):
                continue
            if any(_plausible(candidate) for candidate in plugin.analyze_string(line)):
                found.update((str(plugin.secret_type), value) for value in matched_values(plugin.denylist, line))
        found.update((SK_KIND, m.group(0)) for m in SK_KEY.finditer(line) if _key_like(m.group(0)[3:]))
        for kind, pattern in EXTRA_SHAPES:
            check = SHAPE_CHECKS.get(pattern)
            if check is not None:
                if gated and not may_match(pattern, line):
                    continue
                for match in pattern.finditer(line):
                    value = check(match)
                    if value and (kind in (ASSIGNMENT_KIND, PEM_BODY_KIND) or _plausible(value)):
                        found.add((kind, value))
                continue
            for match in pattern.finditer(line):
                value = match.group(match.re.groups and 1 or 0)
                if kind == MASKED_KIND or _plausible(value) and (kind != "Bearer Token" or _opaque(value)):
                    found.add((kind, value))
        return found

    def redact_text(self, text: str) -> tuple[str, list[str]]:
        """``text`` with every secret replaced by :func:`marker` of its kind; (text, kinds replaced).

        Every occurrence of every secret found is masked; secrets that overlap
        are masked as one span (:func:`lab.export.linear_scan.mask_spans`).
        """
        findings = self.findings(text)
        if not findings:
            return text, []
        markers: dict[str, str] = {}
        # A value found as two kinds takes the first kind's marker, a named kind before a credential assignment.
        for kind, value in sorted(findings, key=lambda found: (found[0] == ASSIGNMENT_KIND, found)):
            markers.setdefault(value, marker(kind))
        return mask_spans(text, markers), sorted({kind for kind, _ in findings})

    def redact(self, document: Any, *, field: str = "") -> tuple[Any, list[SecretHit]]:
        """A copy of ``document`` with every secret replaced by its marker, and the hits replaced.

        Object keys are redacted too; hits name the field and kind, never the value.
        """
        hits: list[SecretHit] = []
        return self._redact(document, field, hits), hits

    def _redact(self, value: Any, path: str, hits: list[SecretHit]) -> Any:
        if isinstance(value, str):
            if not self._suspect(value):
                return value
            text, kinds = self.redact_text(value)
            hits.extend(SecretHit(path, kind) for kind in kinds)
            return text
        if isinstance(value, dict):
            out = {}
            suspect = self._suspect
            for index, (key, item) in enumerate(value.items()):
                if (not isinstance(key, str) or not suspect(key)) and (
                        isinstance(item, str) and not suspect(item)
                        or not isinstance(item, (str, dict, list, tuple))):
                    out[key] = item  # clean key and clean scalar: no path to build
                    continue
                new_key, key_kinds = self.redact_text(str(key)) if isinstance(key, str) else (key, [])
                hits.extend(SecretHit(f"{path}{{key {index}}}", kind) for kind in key_kinds)
                child = f"{path}{{key {index}}}" if key_kinds else _child(path, str(key))
                out[new_key] = self._redact(item, child, hits)
            return out
        if isinstance(value, (list, tuple)):
            return [self._redact(item, f"{path}[{index}]", hits) for index, item in enumerate(value)]
        return value

    def safe_headers(self, headers: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """(headers safe to write, names dropped): credential headers and any whose value holds a secret."""
        kept, dropped = {}, []
        for name, value in headers.items():
            if is_credential_header(name) or self.findings(f"{value}"):
                dropped.append(name)
            else:
                kept[name] = value
        return kept, sorted(dropped)


def find_secrets(document: Any, *, env: Mapping[str, str], credential_env: Iterable[str] = ()) -> list[SecretHit]:
    """Every likely secret in ``document``; see :class:`SecretScanner`.

    Args:
        document: a JSON-able value (an export bundle, a cassette line).
        env: the environment whose credentials must not appear.
        credential_env: extra variable names holding credentials.

    Returns:
        The hits (field path and kind, never the value); [] when clean.
    """
    return SecretScanner(env=env, credential_env=credential_env).scan(document)


def describe_hits(hits: list[SecretHit], *, limit: int = 5) -> str:
    """``field (kind); field (kind) …`` for a one-line message; never a value."""
    shown = "; ".join(f"{h.field or '(document)'} ({h.kind})" for h in hits[:limit])
    more = len(hits) - limit
    return shown + (f"; and {more} more" if more > 0 else "")


def may_hold_key(text: str) -> bool:
    """False when ``text`` surely holds no key shape: neither :func:`_shape_hint` nor
    :data:`lab.export.key_shapes.WORD_HINT` (on the lower-cased text) finds anything."""
    return _shape_hint().search(text) is not None or WORD_HINT.search(text.lower()) is not None


_SCOPED_FLAGS = ((re.IGNORECASE, "i"), (re.DOTALL, "s"), (re.VERBOSE, "x"))
_GLOBAL_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")


@functools.lru_cache(maxsize=1)
def _shape_hint() -> re.Pattern[str]:
    """One pattern that finds something wherever any key-shape pattern would.

    Every pattern (the plugins', ``SK_KEY``, ``EXTRA_SHAPES``, the private
    key block's start) is one alternative, its flags scoped to it
    (``(?i:…)``). None of them is anchored (``^``/``$``) and their look-arounds
    see a line break as a non-word character, so a shape found in one line
    is also found in the whole text: a text (or line) this finds nothing in
    holds no key shape, and the 18 plugins are asked only about the rare
    lines that may. A pattern with a required literal of 3 or more
    characters is represented by that literal alone, which keeps the search
    linear in the text (npm's and the JWT pattern are not). Checked against
    each pattern in tests/export.
    """
    patterns = [p for plugin in key_shape_plugins() for p in plugin().denylist]
    patterns += [SK_KEY, *(p for _, p in EXTRA_SHAPES if p not in SHAPE_CHECKS),
                 re.compile("-----BEGIN [A-Z0-9 ]*PRIVATE KEY"), SHAPE_HINT]
    alternatives = []
    for pattern in patterns:
        literal = max(required_literals(pattern), key=len, default="")
        if len(literal) >= 3:  # the literal alone: linear, whereas some patterns are not
            alternatives.append(re.escape(literal))
            continue
        flags = "".join(letter for flag, letter in _SCOPED_FLAGS if pattern.flags & flag)
        alternatives.append(f"(?{flags}:{_GLOBAL_FLAGS.sub('', pattern.pattern)})")
    return re.compile("|".join(dict.fromkeys(alternatives)))


def marker(kind: str) -> str:
    """The stable marker written in place of a secret: ``<secret:github-token>``, ``<secret:credential>``."""
    if kind.startswith("credential from $"):
        return "<secret:credential>"
    if kind == SK_KIND:
        return "<secret:api-key>"
    return "<secret:" + re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-") + ">"


def _opaque(token: str) -> bool:
    """A bearer token mixes letters and digits; prose after "bearer" does not."""
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _plausible(candidate: str) -> bool:
    """detect-secrets' heuristic filters: drop sequences, UUIDs, templates, ``$VAR`` references."""
    from detect_secrets.filters import heuristic

    return not (heuristic.is_sequential_string(candidate) or heuristic.is_potential_uuid(candidate)
                or heuristic.is_templated_secret(candidate) or heuristic.is_prefixed_with_dollar_sign(candidate))


def _key_like(body: str) -> bool:
    """A random key body: digits and letters, with a run of 16 or more of them unbroken by a
    dash or underscore (``sk-live-0a1b…``, mixed case or not); a kebab-case slug has none."""
    return (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
            and re.search(r"[A-Za-z0-9]{16,}", body) is not None)


def _child(path: str, key: str) -> str:
    if IDENTIFIER_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"
