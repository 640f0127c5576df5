"""A cache never changes a number (SPEC X10): each way a memo once stood in for work it had not keyed.

Each test is one kind of the eight found: the report keyed by the code that
writes it (1), the harness digest over every module a run can execute (2),
the composed configuration keyed by what Hydra reads beyond ``conf/`` (3),
provenance per run (5), one listing for a fixture's copy and the suite digest
(6), bytecode never older than its source (7), ``doit -f`` from anywhere and a
stale probe memo (8). Content stamps (4) are in ``tests/test_stamps.py``; the
differential test of all of them together in ``test_cache_differential.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import lab.config.cache as config_cache
import lab.execute.harness as harness
from lab.compare.deltas import deltas
from lab.config.cache import compose_cached
from lab.config.compose import compose_config
from lab.paths import CONF_DIR
from lab.report.stream import write_report_from_files
from lab.sandbox.workspace import create_workspace
from lab.suites.paths import suite_digest
from lab.suites.tree import walk_suite
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid

ROOT = Path(__file__).resolve().parents[2]


# 1 and 2: what the harness digest and the report-code digest cover ------------------------------

@pytest.fixture(scope="module")
def digest_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir for the module: each source's token digest is computed once (content-addressed)."""
    return tmp_path_factory.mktemp("digests")


@pytest.fixture
def lab_copy(tmp_path: Path, digest_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the lab package that the digests read (as an installed lab other than this one)."""
    copy = tmp_path / "lab"
    shutil.copytree(ROOT / "lab", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(harness, "LAB_DIR", copy)
    monkeypatch.setenv("LAB_CACHE_DIR", str(digest_data))
    fresh()
    yield copy
    fresh()


def fresh() -> None:
    """As a new process: nothing computed yet."""
    for cached in (harness.harness_digest, harness.report_code_digest, harness._file_values,
                   harness.runtime_distributions):
        cached.cache_clear()


def digests() -> tuple[str, str]:
    fresh()
    return harness.harness_digest(), harness.report_code_digest()


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


@pytest.mark.parametrize("module", ["suites/load.py", "files.py", "errors.py", "execute/plan.py",
                                    "export/secrets.py", "config/identity.py", "build/actions.py",
                                    "schemas/run-record.schema.json"])
def test_an_edit_of_any_module_a_run_can_execute_runs_again(lab_copy: Path, module: str) -> None:
    """Finding 2: the budget, redaction, files, errors and the plan were outside the digest."""
    run, report = digests()
    append(lab_copy / module, "\nX = 1\n" if module.endswith(".py") else " ")
    assert digests()[0] != run and digests()[1] != report


def test_a_change_to_the_report_code_rebuilds_reports_and_runs_nothing(lab_copy: Path) -> None:
    """Finding 1: the Wilson interval's z changed, the report's key changes, the runs' does not."""
    run, report = digests()
    stats = lab_copy / "report" / "stats.py"
    stats.write_text(stats.read_text(encoding="utf-8").replace("Z_95 = 1.959963984540054", "Z_95 = 1.644853626951472"),
                     encoding="utf-8")
    new_run, new_report = digests()
    assert new_run == run and new_report != report
    append(lab_copy / "schemas" / "report.schema.json", "\n")
    assert digests()[1] not in (report, new_report)


@pytest.mark.parametrize("edit", ["comment", "blank lines", "comment-only line"])
def test_a_comment_edit_runs_nothing_again(lab_copy: Path, edit: str) -> None:
    """Finding 8: a comment in providers/preflight.py re-ran every run."""
    before = digests()
    preflight = lab_copy / "providers" / "preflight.py"
    text = preflight.read_text(encoding="utf-8")
    if edit == "comment":
        text = text.replace("from __future__ import annotations", "from __future__ import annotations  # why", 1)
    elif edit == "blank lines":
        text += "\n\n\n"
    else:
        text += "# a note for readers\n"
    preflight.write_text(text, encoding="utf-8")
    assert digests() == before


def test_a_docstring_edit_runs_again(lab_copy: Path) -> None:
    """Docstrings count (a tool's description is one)."""
    before = digests()
    preflight = lab_copy / "providers" / "preflight.py"
    preflight.write_text(preflight.read_text(encoding="utf-8").replace("Preflight:", "Preflight -", 1), encoding="utf-8")
    assert digests()[0] != before[0]


def test_another_version_of_a_required_distribution_runs_again(lab_copy: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    before = digests()
    assert any(name.startswith("httpx==") for name in harness.runtime_distributions())
    site = tmp_path / "site"
    (site / "httpx-99.0.0.dist-info").mkdir(parents=True)
    (site / "httpx-99.0.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: httpx\nVersion: 99.0.0\n")
    monkeypatch.syspath_prepend(str(site))
    assert digests()[0] != before[0]
    assert "httpx==99.0.0" in harness.runtime_distributions()


# 3: what the composed configuration is keyed by ------------------------------------------------

@pytest.fixture
def composes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The override lists actually composed (a spy around the real compose: a hit is a missing call)."""
    calls: list[list[str]] = []
    real: Callable[..., Any] = compose_config

    def spy(overrides: list[str], **kwargs: Any) -> Any:
        calls.append(list(overrides))
        return real(overrides, **kwargs)

    monkeypatch.setattr(config_cache, "compose_config", spy)
    return calls


@pytest.mark.slow
def test_a_plugin_dropped_into_an_existing_hydra_plugins_composes_again(
        tmp_path: Path, composes: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "hydra_plugins").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(site))
    cache = tmp_path / "cache"
    compose_cached(["sandbox=none"], cache=cache)
    compose_cached(["sandbox=none"], cache=cache)
    assert len(composes) == 1
    (site / "hydra_plugins" / "lab_probe_plugin").mkdir()
    (site / "hydra_plugins" / "lab_probe_plugin" / "__init__.py").write_text("X = 1\n", encoding="utf-8")
    compose_cached(["sandbox=none"], cache=cache)
    assert len(composes) == 2


@pytest.mark.slow
def test_a_path_arriving_through_pythonpath_or_another_interpreter_composes_again(
        tmp_path: Path, composes: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    compose_cached(["sandbox=none"], cache=cache)
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    compose_cached(["sandbox=none"], cache=cache)
    assert len(composes) == 2
    monkeypatch.setattr(sys, "executable", str(tmp_path / "other-venv" / "bin" / "python"))
    compose_cached(["sandbox=none"], cache=cache)
    assert len(composes) == 3


@pytest.mark.slow
def test_a_search_path_folder_and_the_variables_its_files_read_are_keys(
        tmp_path: Path, composes: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    conf, extra, cache = tmp_path / "conf", tmp_path / "extra", tmp_path / "cache"
    shutil.copytree(CONF_DIR, conf)
    (extra / "provider").mkdir(parents=True)
    scripted = (CONF_DIR / "provider" / "scripted.yaml").read_text(encoding="utf-8")
    (extra / "provider" / "envy.yaml").write_text(scripted.replace("model: scripted", "model: ${oc.env:LAB_TEST_MODEL}"),
                                                  encoding="utf-8")
    config = conf / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("\nhydra:\n", f"\nhydra:\n  searchpath: [file://{extra}]\n"),
                      encoding="utf-8")
    monkeypatch.setenv("LAB_TEST_MODEL", "m1")
    overrides = ["provider=envy", "sandbox=none"]
    assert compose_cached(overrides, conf_dir=conf, cache=cache).data["provider"]["model"] == "m1"
    assert compose_cached(overrides, conf_dir=conf, cache=cache).data["provider"]["model"] == "m1"
    assert len(composes) == 1
    monkeypatch.setenv("LAB_TEST_MODEL", "m2")
    assert compose_cached(overrides, conf_dir=conf, cache=cache).data["provider"]["model"] == "m2"
    envy = extra / "provider" / "envy.yaml"
    envy.write_text(envy.read_text(encoding="utf-8").replace("stream: false", "stream: true "), encoding="utf-8")
    assert compose_cached(overrides, conf_dir=conf, cache=cache).data["provider"]["stream"] is True
    assert len(composes) == 3


# 5: provenance per run --------------------------------------------------------------------------

def with_runtime(record: dict[str, Any], jobs: int) -> dict[str, Any]:
    record["runtime"] = {"jobs": jobs, "machine": "0123456789ab", "sandbox": "bwrap", "executor": "local",
                         "labVersion": "0.1.0"}
    return record


def report_over(tmp_path: Path, name: str, jobs: list[int]) -> dict[str, Any]:
    paths = []
    for i, j in enumerate(jobs):
        path = tmp_path / name / "runs" / f"r{i}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(with_runtime(make_record("task-a", i, wall_ms=1000 * (i + 1)), j)))
        paths.append(path)
    header = {**make_header(k=len(jobs)), "sandbox": "bwrap", "reportCodeDigest": "d" * 64}
    write_report_from_files(tmp_path / name / "report", header, paths)
    doc: dict[str, Any] = json.loads((tmp_path / name / "report" / "report.json").read_text(encoding="utf-8"))
    assert_valid("report", doc)
    return doc


def test_a_report_states_its_runs_conditions_not_the_commands(tmp_path: Path) -> None:
    """Finding 5: jobs and machine came from whichever command rebuilt the report."""
    doc = report_over(tmp_path, "one", [1, 1])
    assert doc["header"]["execution"] == {"jobs": 1, "machine": "0123456789ab", "sandbox": "bwrap",
                                          "executor": "local", "labVersion": "0.1.0"}
    mixed = report_over(tmp_path, "mixed", [1, 3])
    assert mixed["header"]["execution"]["jobs"] == {"mixed": [1, 3]}


def test_compare_reads_the_runs_conditions(tmp_path: Path) -> None:
    one, three, mixed = (report_over(tmp_path, name, jobs) for name, jobs in
                         (("one", [1, 1]), ("three", [3, 3]), ("mixed", [1, 3])))
    again = report_over(tmp_path, "again", [1, 1])
    assert deltas(one, again, same_mode=True)["wallMsPerSuccess"]["comparable"] is True
    assert deltas(one, three, same_mode=True)["wallMsPerSuccess"]["reason"] == \
        "runs made with different jobs (base 1, cand 3)"
    assert deltas(one, mixed, same_mode=True)["wallMsPerSuccess"]["reason"] == \
        "cand runs made under mixed conditions (jobs [1, 3])"


# 6: one listing for the copy and the digest -----------------------------------------------------

def test_the_suite_digest_covers_exactly_what_a_runs_copy_holds(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    fixture = suite / "fixtures" / "t"
    for rel in ("a.py", "sub/b.txt", "node_modules/m/index.js", "stale.pyc", ".DS_Store", "__pycache__/a.cpython-311.pyc",
                ".pytest_cache/v", ".git/HEAD", "sub/.DS_Store"):
        (fixture / rel).parent.mkdir(parents=True, exist_ok=True)
        (fixture / rel).write_text(rel, encoding="utf-8")
    (fixture / "link").symlink_to("a.py")
    copy = create_workspace(fixture, parent=tmp_path)
    in_copy = {p.relative_to(copy).as_posix() for p in copy.rglob("*") if not p.is_dir() or p.is_symlink()}
    digested = {e.rel.removeprefix("fixtures/t/") for e in walk_suite(suite).entries
                if e.kind != "dir" and e.rel.startswith("fixtures/t/")}
    assert in_copy == digested == {"a.py", "sub/b.txt", "node_modules/m/index.js", "link", ".git/HEAD"}
    before = suite_digest(suite)
    (fixture / "stale.pyc").write_text("other", encoding="utf-8")  # not in the copy: no run can read it
    assert suite_digest(suite) == before
    (fixture / "node_modules" / "m" / "index.js").write_text("changed", encoding="utf-8")  # in the copy
    assert suite_digest(suite) != before


# 7: bytecode never older than its source --------------------------------------------------------

@pytest.mark.slow
def test_a_same_size_edit_with_its_mtime_put_back_runs_the_new_code(tmp_path: Path) -> None:
    """Finding 7: Python's timestamp .pyc ran the old code while the digest named the new source."""
    shutil.copytree(ROOT / "lab", tmp_path / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tmp_path)
    show = [sys.executable, "-c", "import lab.execute.plan as p, lab; print(p.HARNESS_VERSION, p.__file__)"]
    # A timestamp .pyc as a plain `compileall` or another tool leaves it, then the lab's own.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tmp_path / "lab" / "execute")], env=env, check=True)
    first = subprocess.run(show, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert first == ["0.1.0", str(tmp_path / "lab" / "execute" / "plan.py")]
    plan = tmp_path / "lab" / "execute" / "plan.py"
    times = plan.stat()
    plan.write_text(plan.read_text(encoding="utf-8").replace('HARNESS_VERSION = "0.1.0"', 'HARNESS_VERSION = "0.1.9"'),
                    encoding="utf-8")
    os.utime(plan, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert plan.stat().st_size == times.st_size
    again = subprocess.run(show, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert again[0] == "0.1.9"


# 8: doit from anywhere --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("how", ["-f", "--seek-file", "-f and -d"])
def test_doit_finds_the_lab_backend_from_outside_the_checkout(tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / ".doit.sqlite").write_bytes(b"not a database")  # only the lab's backend sets it aside
    doit = [sys.executable, "-m", "doit"]
    if how == "-f":
        args, cwd = [*doit, "-f", str(ROOT / "dodo.py"), "list"], tmp_path
    elif how == "--seek-file":
        args, cwd = [*doit, "--seek-file", "list"], ROOT / "lab" / "report"
    else:
        args, cwd = [*doit, "-f", str(ROOT / "dodo.py"), "-d", str(tmp_path), "list"], tmp_path
    env = {**os.environ, "LAB_DATA_DIR": str(data)}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "eval " in done.stdout and "corrupted dependency database" in done.stderr
    assert (data / ".doit.sqlite.corrupt").exists()
