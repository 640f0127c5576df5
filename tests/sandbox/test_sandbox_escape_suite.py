"""The shipped escape corpus (tests/sandbox/escape_suite) run end to end by `lab run`.

The suite's scripted agent tries every escape of issue 11 with ``run_command``
(``probe.py <attempt> --log``) and its verifiers try each again as ``command``
verifiers; every verifier passes only when its attempt was contained. The
test fills in ``targets.json`` (the checkout, a host directory, a host file to
hard-link, a loopback port it listens on, a marker for the run's processes).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd
from tests.helpers.sandboxed import require_bwrap
from tests.helpers.schemas import assert_valid

SUITE = Path(__file__).parent / "escape_suite"
ATTEMPTS = ("read-root", "read-ssh", "read-checkout", "proc-1-environ", "proc-ppid-environ",
            "proc-all-environ", "env", "write-root", "write-host-tmp", "write-checkout",
            "write-dotdot", "write-symlink", "loopback", "sleepers", "fork-bomb", "file-size",
            "hard-link", "keyring-read", "keyring-plant", "pid1-memory")


@dataclass
class Corpus:
    suite: Path
    host_tmp: Path
    marker: str
    data: Path
    port: int


def _serve(server: socket.socket) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return  # the listening socket was shut down
        with conn:
            conn.sendall(b"host service\n")


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue  # exited meanwhile
    return found


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    suite = tmp_path / "escape-suite"
    shutil.copytree(SUITE, suite)
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    host_tmp.chmod(0o777)
    (host_tmp / "victim.txt").write_text("a host file\n", "utf-8")
    marker = "lab-escape-" + secrets.token_hex(8)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    thread = threading.Thread(target=_serve, args=(server,), daemon=True)
    thread.start()
    port = server.getsockname()[1]
    targets = {"marker": marker, "checkout": str(ROOT), "hostTmp": str(host_tmp),
               "victim": str(host_tmp / "victim.txt"), "port": port}
    (suite / "fixtures" / "escapes" / "targets.json").write_text(json.dumps(targets), "utf-8")
    yield Corpus(suite, host_tmp, marker, tmp_path / "data", port)
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join()
    for pid in _processes_with(marker):  # what sandbox=none left on the host
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _lab_run(corpus: Corpus, *overrides: str) -> tuple[int, str, str]:
    result = run_cmd(["lab", "run", "suite=external", f"suite.path={corpus.suite}", "yes=true",
                      "provider=scripted", "k=1", *overrides], corpus.data, timeout_s=600)
    return result.returncode, result.stdout, result.stderr


def _record(corpus: Corpus) -> dict[str, object]:
    [path] = corpus.data.glob("sandbox-escapes/*/runs/escapes/*.json")
    record = json.loads(path.read_text("utf-8"))
    assert_valid("run-record", record, str(path))
    return dict(record)


def _report(corpus: Corpus) -> tuple[dict[str, object], str, str]:
    [report_dir] = corpus.data.glob("sandbox-escapes/*/reports/*")
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    assert_valid("report", report, str(report_dir))
    return (report["header"], (report_dir / "report.md").read_text("utf-8"),
            (report_dir / "index.html").read_text("utf-8"))


def _verdicts(record: dict[str, object]) -> dict[str, str]:
    verifiers = record["verifiers"]
    assert isinstance(verifiers, list)
    return {v["id"]: v["status"] for v in verifiers}


def test_every_escape_is_contained_under_bwrap(corpus: Corpus, planted_key: str) -> None:
    require_bwrap()
    assert os.environ["FAKE_API_KEY"] == planted_key  # planted in the lab's environment
    code, out, err = _lab_run(corpus, "sandbox=bwrap")
    assert code == 0, out + err
    record = _record(corpus)
    verdicts = _verdicts(record)
    expected = {f"{who}-{attempt}" for who in ("agent", "verifier") for attempt in ATTEMPTS}
    assert set(verdicts) == expected
    escaped = sorted(name for name, status in verdicts.items() if status != "pass")
    assert not escaped, f"not contained: {escaped}"
    assert record["sandbox"] == "bwrap" and record["status"] == "pass"
    assert record["toolCalls"] == len(ATTEMPTS) + 2
    header, markdown, html = _report(corpus)
    assert header["sandbox"] == "bwrap"
    assert re.search(r"^\| sandbox +\| bwrap +\|$", markdown, re.M), markdown
    assert "<tr><th>sandbox</th><td>bwrap</td></tr>" in html
    assert "sandbox: bwrap" in out
    # nothing reached the host
    assert sorted(p.name for p in corpus.host_tmp.iterdir()) == ["victim.txt"]
    assert not any(corpus.marker in p.name for p in ROOT.iterdir())
    assert not os.path.lexists("/" + corpus.marker)
    # no process of the run is alive (the sleepers carry the marker in their argv)
    assert _processes_with(corpus.marker) == []
    # the planted key is in no file under the data dir
    leaked = [str(p) for p in corpus.data.rglob("*")
              if p.is_file() and planted_key.encode() in p.read_bytes()]
    assert leaked == []


def _keep_only(corpus: Corpus, attempts: set[str]) -> None:
    """Trim the copied suite to ``attempts``: their verifiers and the agent's probe calls for them."""
    suite_file, script_file = corpus.suite / "suite.json", corpus.suite / "scripts" / "escapes.json"
    suite, script = json.loads(suite_file.read_text("utf-8")), json.loads(script_file.read_text("utf-8"))
    [task] = suite["tasks"]
    task["verifiers"] = [v for v in task["verifiers"] if v["id"].split("-", 1)[1] in attempts]
    for turn in script["turns"]:
        if "toolCalls" in turn:
            turn["toolCalls"] = [c for c in turn["toolCalls"] if c["arguments"]["argv"][1:2] != ["probe.py"]
                                 or c["arguments"]["argv"][2] in attempts]
    script["turns"] = [t for t in script["turns"] if t.get("toolCalls") != []]  # a turn left with no call
    suite_file.write_text(json.dumps(suite), "utf-8")
    script_file.write_text(json.dumps(script), "utf-8")


def test_the_corpus_runs_unsandboxed_with_trust_local_and_says_so(corpus: Corpus) -> None:
    # Only harmless attempts on the host: no fork bomb, no sleepers, no writes outside tmp_path.
    _keep_only(corpus, {"read-checkout", "env", "loopback", "write-dotdot"})
    code, out, err = _lab_run(corpus, "sandbox=none", "trust_local=true")
    assert code in (0, 1) and "runs: 1 of 1" in out, out + err  # completed; failing verifiers are data
    record = _record(corpus)
    assert record["sandbox"] == "none" and record["status"] == "fail"
    verdicts = _verdicts(record)
    assert len(verdicts) == 8
    # on the host the probes do escape: the corpus can tell contained from not
    assert verdicts["verifier-loopback"] == "fail" and verdicts["agent-loopback"] == "fail"
    assert verdicts["verifier-write-dotdot"] == "fail"
    header, markdown, html = _report(corpus)
    assert header["sandbox"] == "none"
    assert re.search(r"^\| sandbox +\| none +\|$", markdown, re.M), markdown
    assert "<tr><th>sandbox</th><td>none</td></tr>" in html
    assert "sandbox: none" in out


def test_an_unsandboxed_third_party_suite_is_refused_without_trust_local(corpus: Corpus) -> None:
    code, out, err = _lab_run(corpus, "sandbox=none")
    assert code == 1
    lines = [line for line in err.splitlines() if "trust_local" in line]
    assert len(lines) == 1 and "third-party" in lines[0] and "sandbox=none" in lines[0]
    assert not list(corpus.data.glob("sandbox-escapes/*/runs/**/*.json"))
