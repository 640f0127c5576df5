"""Secrets are redacted by kind, and user names never survive an export (lab.export.secrets, bundle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.export.bundle import export_run, path_bases, placeholder_paths
from lab.export.secrets import SecretScanner, marker
from tests.helpers.reports import make_header, make_records, write_report_dir
from tests.helpers.schemas import assert_valid

# Fake keys of every supported shape (assembled at run time: this file holds none).
CORPUS = {
    "GitHub Token": ["ghp_" + "0123456789abcdefghijABCDEFGHIJ012345",
                     "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV0123456"],
    "Google API Key": ["AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"],
    "AWS Access Key": ["AKIA" + "IOSFODNN7EXAMPL3"],
    "sk- API key (OpenAI/Anthropic style)": ["sk-proj-" + "AbC123dEf456GhI789jKl012MnO345pQr678"],
    "Slack Token": ["xoxb-" + "1234567890-abcdefghijklmnop"],
    "NPM Token": ["npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"],
}
SHAPES = [(kind, key) for kind, keys in CORPUS.items() for key in keys]
OPAQUE = "9f8e7d6c5b4a3928" + "1706abcdefXYZ123"  # an opaque token: known only after "Bearer"


def placements(key: str) -> dict[str, str]:
    """The key in a header, a JSON body, a KEY=value line and a URL."""
    bearer = f"Authorization: Bearer {key}"
    return {"header": bearer, "json": json.dumps({"token": key, "note": "x"}),
            "env-line": f"DEPLOY_TOKEN={key}\nOTHER=1", "url": f"https://deploy:{key}@git.example.com/r.git"}


@pytest.mark.parametrize(("kind", "key"), SHAPES, ids=[k[:24] for _, k in SHAPES])
@pytest.mark.parametrize("where", ["header", "json", "env-line", "url"])
def test_every_shape_is_redacted_in_every_placement(kind: str, key: str, where: str) -> None:
    text = placements(key)[where]
    redacted, kinds = SecretScanner(env={}).redact_text(text)
    assert key not in redacted
    assert kinds and "<secret:" in redacted


@pytest.mark.parametrize(("kind", "key"), SHAPES, ids=[k[:24] for _, k in SHAPES])
def test_the_marker_names_the_kind(kind: str, key: str) -> None:
    redacted, kinds = SecretScanner(env={}).redact_text(f"value {key} end")
    assert kind in kinds
    assert redacted == f"value {marker(kind)} end" or key not in redacted


def test_markers_are_stable_and_never_hold_the_value() -> None:
    assert marker("GitHub Token") == "<secret:github-token>"
    assert marker("credential from $OPENAI_API_KEY") == "<secret:credential>"
    assert SecretScanner(env={}).redact_text("<secret:github-token>") == ("<secret:github-token>", [])


@pytest.mark.parametrize("name", ["authorization", "api-key", "X-Api-Key", "x-goog-api-key", "Cookie"])
def test_credential_headers_are_dropped(name: str) -> None:
    kept, dropped = SecretScanner(env={}).safe_headers({name: "anything", "X-Title": "lab"})
    assert (kept, dropped) == ({"X-Title": "lab"}, [name])


def test_a_header_holding_a_configured_secret_is_dropped() -> None:
    scanner = SecretScanner(env={"GATEWAY_TOKEN": "gw-value-12345"})
    assert scanner.safe_headers({"X-Gateway": "gw-value-12345"}) == ({}, ["X-Gateway"])


def test_redaction_of_a_document_names_field_and_kind_never_the_value() -> None:
    key = CORPUS["Google API Key"][0]
    doc, hits = SecretScanner(env={}).redact({"events": [{"output": f"k={key}"}]})
    assert doc == {"events": [{"output": "k=<secret:google-api-key>"}]}
    assert [h.to_json() for h in hits] == [{"field": "events[0].output", "kind": "Google API Key"}]


@pytest.mark.parametrize("text", [f"Authorization: Bearer {OPAQUE}", f"curl -H 'authorization: bearer {OPAQUE}' x",
                                  json.dumps({"Authorization": f"Bearer {OPAQUE}"})])
def test_an_opaque_bearer_token_is_redacted(text: str) -> None:
    redacted, kinds = SecretScanner(env={}).redact_text(text)
    assert (OPAQUE in redacted, kinds) == (False, ["Bearer Token"])
    assert "<secret:bearer-token>" in redacted


def test_bearer_in_prose_is_not_a_secret() -> None:
    assert SecretScanner(env={}).redact_text("bearer authentication is described here")[1] == []


@given(st.sampled_from([k for _, k in SHAPES]), st.text(alphabet=" \n=:\"'/,;", min_size=1, max_size=5),
       st.text(alphabet=" \n=:\"'/,;", min_size=1, max_size=5))
def test_a_key_between_any_separators_is_redacted(key: str, before: str, after: str) -> None:
    redacted, _ = SecretScanner(env={}).redact_text(f"x{before}{key}{after}y")
    assert key not in redacted


# --- user names in paths --------------------------------------------------------------------------

BASES = path_bases(Path("/R/run"), home=Path("/R/home/u"), tmp=Path("/R"))


@pytest.mark.parametrize(("text", "expected"), [
    ("C:\\Users\\someuser\\proj\\a.py", "<home>\\proj\\a.py"),
    ("C:\\\\Users\\\\someuser\\\\proj\\\\a.py", "<home>\\\\proj\\\\a.py"),
    ("/home/first last/work/x.py", "<home>/work/x.py"),
    ("/opt/ci/runner-7/src/a.py", "<path>/src/a.py"),
])
def test_user_names_do_not_survive(text: str, expected: str) -> None:
    assert placeholder_paths(text, BASES) == expected


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", min_size=3, max_size=12)


@given(st.lists(_NAME, min_size=1, max_size=3).map(" ".join), st.sampled_from(["/home/", "/Users/", "C:\\Users\\",
                                                                             "C:\\\\Users\\\\"]))
def test_no_user_name_survives_in_any_home_form(user: str, root: str) -> None:
    sep = "/" if root.startswith("/") else root[2:-5]
    text = f"error in {root}{user}{sep}proj{sep}a.py: bad"
    scrubbed = placeholder_paths(text, BASES)
    assert user not in scrubbed and scrubbed.startswith("error in <home>")


def test_export_with_redact_writes_markers_instead_of_refusing(tmp_path: Path) -> None:
    from lab.report import build_report

    key = CORPUS["GitHub Token"][1]
    header = make_header(k=2)
    records = make_records({"a": "PP"})
    records[1]["verifiers"][0]["detail"] = f"token {key}"
    write_report_dir(tmp_path / "data", build_report(header, records), records)
    out = tmp_path / "bundle.json"
    export_run(header["runId"], out, data=tmp_path / "data", env={}, home=tmp_path / "h", redact=True)
    text = out.read_text(encoding="utf-8")
    assert key not in text and "<secret:github-token>" in text
    assert_valid("export", json.loads(text))


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["lab", "export", "{run}", "out={out}", "redact=true"],
                                  ["doit", "export", "run={run}", "out={out}", "redact=true"]])
def test_redact_true_on_the_command_line(tmp_path: Path, argv: list[str]) -> None:
    from lab.report import build_report
    from tests.helpers.lab_process import run_cmd

    key = CORPUS["AWS Access Key"][0]
    header = make_header(k=2)
    records = make_records({"a": "PP"})
    records[1]["verifiers"][0]["detail"] = f"stderr: {key}"
    write_report_dir(tmp_path, build_report(header, records), records)
    out = tmp_path / "bundle.json"
    result = run_cmd([a.format(run=header["runId"], out=out) for a in argv], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    text = out.read_text(encoding="utf-8")
    assert key not in text and "<secret:aws-access-key>" in text


def test_a_url_with_an_empty_user_name_loses_its_password() -> None:
    redacted, kinds = SecretScanner(env={}).redact_text("REDIS_URL=redis://:" + "s3cretpass" + "@cache:6379/0")
    assert redacted == "REDIS_URL=redis://:<secret:basic-auth-credentials>@cache:6379/0"
    assert kinds == ["Basic Auth Credentials"]


@pytest.mark.parametrize("text", ["npm_install_packages_for_the_whole_repository_now", "see http://host:8080/a@b",
                                  "mailto:me@example.com"])
def test_look_alikes_are_left_alone(text: str) -> None:
    assert SecretScanner(env={}).redact_text(text) == (text, [])
