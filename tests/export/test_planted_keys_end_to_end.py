"""Every planted key shape stays out of everything the lab writes, through the real paths.

A recorded eval (``doit eval … mode=record``) against a loopback OpenAI-compatible server whose
scripted model writes a file holding the whole corpus (tool-call arguments), searches it (tool
results: the ``search`` tool prints key lines, PEM body lines among them) and answers with the
keys again (streamed text, split across deltas). Then ``lab export`` of the run. The data dir,
the user cache dir, the cassettes (each event and the joined deltas) and the export must hold no
planted key in any spelling, and the export must succeed without ``redact=true``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lab.replay.scrub import stream_texts
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.key_corpus import corpus, secrets_of
from tests.helpers.lab_process import command_env, run_script
from tests.helpers.openai_stub import ScriptedStub, Turn

TASK = "fix-default-argument"


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_script(argv, env=env)


def short(name: str) -> bool:
    """Entries other than whole private keys: the streamed answer repeats these (the cassette's
    size limit leaves room for the keys' blocks in the tool-call arguments and the tool result only)."""
    return name not in {"pem-block", "pem-body-lines", "gcp-service-account"}


def spellings(secret: str) -> list[str]:
    once = json.dumps(secret)[1:-1]
    return [secret, once, json.dumps(once)[1:-1]]


def leaks_in(root: Path, secrets: list[str]) -> list[str]:
    """``file: secret prefix`` for every planted secret found in a file under ``root``."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        text = path.read_bytes().decode("utf-8", errors="replace")
        found += [f"{path.relative_to(root)}: {s[:10]}…" for s in secrets if any(f in text for f in spellings(s))]
    return found


@pytest.mark.slow
def test_no_planted_key_reaches_the_data_dir_the_cache_dir_cassettes_or_an_export(tmp_path: Path) -> None:
    entries = corpus()
    secrets = secrets_of(entries)
    everything = "\n".join(text for text, _ in entries.values())
    data, cache, cassettes = tmp_path / "data", tmp_path / "cache", tmp_path / "cassettes"
    env = command_env()
    env.update(LAB_DATA_DIR=str(data), LAB_CACHE_DIR=str(cache), LAB_TEST_PLANTED_KEY="sk-test-unrelated-0123456789ab")
    turns = [Turn(calls=(("write_file", {"path": "creds.txt", "content": everything}),)),
             Turn(calls=(("search", {"pattern": "[A-Za-z0-9]", "path": "creds.txt"}),)),
             Turn(text="Found these:\n" + "\n".join(text for name, (text, _) in entries.items() if short(name)))]
    with LocalHTTPServer() as server:
        server.handler = ScriptedStub(turns)
        result = run(["doit", "eval", "suite=smoke-coding", f"tasks=[{TASK}]", "mode=record", "provider=openai",
                      "provider.model=stub-model", f"provider.base_url={server.url}/v1",
                      "provider.api_key_env=LAB_TEST_PLANTED_KEY", "+provider.headers.X-Title=lab-e2e",
                      f"cassette_dir={cassettes}", "yes=true", "trust_local=true", "preflight=false"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = next(data.glob("smoke-coding/*/reports/*")).name
    assert (next(data.glob("smoke-coding/*/reports/*")) / "index.html").is_file()
    out = tmp_path / "export" / "bundle.json"
    exported = run(["lab", "export", run_id, f"out={out}"], env)
    assert exported.returncode == 0, exported.stdout + exported.stderr

    assert leaks_in(data, secrets) == []
    assert leaks_in(cache, secrets) == []
    assert leaks_in(cassettes, secrets) == []
    assert leaks_in(out.parent, secrets) == []
    assert not any("lab-e2e" in p.read_text(errors="replace") for p in cache.rglob("*.json"))  # header values
    cassette_files = list(cassettes.rglob("*.jsonl"))
    assert cassette_files
    recorded = "".join(p.read_text(encoding="utf-8") for p in cassette_files)
    for mark in ("hugging-face-token", "groq-api-key", "xai-api-key", "aws-secret-access-key", "private-key"):
        assert f"<secret:{mark}>" in recorded  # the keys were there, and were replaced
    for path in cassette_files:  # the joined deltas of every stream, not only each event
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            exchange = json.loads(line)["exchange"]
            if exchange.get("type") == "sse":
                joined = "".join(stream_texts(exchange))
                assert [s[:10] for s in secrets if any(f in joined for f in spellings(s))] == []
