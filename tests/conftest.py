"""Fixtures shared by every test: a clean environment and the --run-live switch."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests without their own max_examples try 30 examples on every run (about a third of hypothesis'
# default): `make test` stays short enough to run before each commit. `pytest --hypothesis-profile=thorough`
# tries ten times as many (and every explicit max_examples is kept either way). No per-example deadline:
# on a loaded machine (two workers, a Ray cluster and Chromium on 2 cores) a 200 ms example can take longer,
# and hypothesis then fails a correct test as flaky; how long the tests take is what --durations shows.
settings.register_profile("default", max_examples=30, deadline=None)
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile("default")

SECRET_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY")
ARTIFACTS = os.environ.get("LAB_TEST_ARTIFACTS")
"""Where tests keep pictures for a reader (``.ci/run`` sets it); read here, before ``clean_env`` removes LAB_*."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-live", action="store_true", default=False,
                     help="also run tests that call a real provider (needs an API key)")
    parser.addoption("--run-agents", action="store_true", default=False,
                     help="also run tests with real command agents (codex, aider, mini-swe-agent), installed "
                          "with `lab agents install` into $LAB_AGENTS_DIR (reused) or a temp dir")
    parser.addoption("--fresh-processes", action="store_true", default=False,
                     help="start every lab/doit command of the tests as a fresh interpreter instead of forking it "
                          "from a server that imported the lab once (tests/helpers/forkserver.py)")
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files in tests/golden/ instead of comparing against them")


def pytest_configure(config: pytest.Config) -> None:
    from tests.helpers.lab_process import FRESH

    FRESH["processes"] = bool(config.getoption("--fresh-processes"))
    _python3_without_a_shim()


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests.helpers import forkserver

    forkserver.shutdown()
    if _SHIM_DIR:
        shutil.rmtree(_SHIM_DIR.pop(), ignore_errors=True)


_SHIM_DIR: list[str] = []


def _python3_without_a_shim() -> None:
    """When ``python3`` on ``PATH`` is a script (a version manager's shim, e.g. pyenv's: 0.2 s of CPU a call),
    put the same interpreter first on ``PATH``: the one this test run uses, outside its virtualenv.

    Commands the tests start (verifiers, agents under ``sandbox=none``) call ``python3`` hundreds of times; the
    bwrap sandbox has its own ``PATH`` and is not affected.
    """
    found = shutil.which("python3")
    if found is None:
        return
    with open(found, "rb") as head:
        if head.read(2) != b"#!":
            return
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    directory = tempfile.mkdtemp(prefix="lab-tests-python3-")
    os.symlink(base, os.path.join(directory, "python3"))
    _SHIM_DIR.append(directory)
    os.environ["PATH"] = directory + os.pathsep + os.environ.get("PATH", os.defpath)


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own, which appends each test's group to its node id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if getattr(config.option, "loadgroup", False):  # a test worker of `--dist loadgroup`
        _UNGROUPED.update(item.nodeid for item in items
                          if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid)
    if not config.getoption("--run-agents"):
        skip_agents = pytest.mark.skip(reason="real command agent test (installs codex/aider/mini-swe-agent): "
                                              "pass --run-agents")
        for item in items:
            if item.get_closest_marker("agents") is not None:  # not item.keywords: it holds directory names
                item.add_marker(skip_agents)
    if config.getoption("--run-live"):
        os.environ["LAB_RUN_LIVE"] = "1"
        return
    skip = pytest.mark.skip(reason="live provider test: pass --run-live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


_UNGROUPED: set[str] = set()
"""Tests marked ``xdist_group`` that pytest-xdist left without a group (each then fails, saying why)."""


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.nodeid in _UNGROUPED:  # e.g. pytest 9.2 with pytest-xdist 3.8 (pytest-dev/pytest-xdist#1386)
        pytest.fail("--dist loadgroup did not group this test marked xdist_group: this pytest and pytest-xdist "
                    "do not group tests, and the tests of a group would start their shared resource once per "
                    "worker; install the versions pyproject.toml names (make does)", pytrace=False)


@pytest.fixture
def keep_artifact() -> Callable[[Path, str], None]:
    """``keep_artifact(path, name)`` copies a file the test made (a screenshot) to ``$LAB_TEST_ARTIFACTS/name``,
    when that variable was set for the test run; otherwise it does nothing."""
    def keep(path: Path, name: str) -> None:
        if ARTIFACTS:
            Path(ARTIFACTS).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(ARTIFACTS) / name)
    return keep


def new_temp_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    """A new empty directory (mode 0700) under the session's base temp dir, named ``<name>`` and a
    random suffix. pytest's own numbered dirs (``tmp_path``, ``mktemp``) list the whole base dir to
    find the next number, so each test paid for every directory made before it: about 10% of the
    test workers' CPU at three directories a test."""
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=factory.getbasetemp()))


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest's ``tmp_path`` (a new directory per test), made by :func:`new_temp_dir` instead of a
    numbered dir. Every one is kept after the session, as pytest's default retention policy
    (``all``) keeps its own; ``tmp_path_retention_policy`` is not read."""
    return new_temp_dir(tmp_path_factory, re.sub(r"\W", "_", request.node.name)[:30])


@pytest.fixture(scope="session", autouse=True)
def commands_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The cache dir of the lab commands tests start (``lab_env``) and of module- and session-scoped
    fixtures (they run before ``clean_env``): one per session, shared by the test workers (under the
    session's base temp dir, not a worker's), never the user's ``~/.cache/reliability-lab``.

    Those fixtures also get a run store of the worker's own (``LAB_DATA_DIR``), never the checkout's
    ``runs/`` (the default data dir of a checkout)."""
    from tests.helpers.lab_process import SHARED_CACHE

    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "commands-cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    SHARED_CACHE["dir"] = str(cache)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAB_CACHE_DIR", str(cache))
        patch.setenv("LAB_DATA_DIR", str(new_temp_dir(tmp_path_factory, "session-runs")))
        yield cache


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No LAB_* variables or API keys leak in; the run store lives in a temp dir."""
    live = os.environ.get("LAB_RUN_LIVE") == "1"
    for name in list(os.environ):
        if name.startswith("LAB_") and not (live and name == "LAB_RUN_LIVE"):
            monkeypatch.delenv(name, raising=False)
        if (name in SECRET_VARS or name == "OPENAI_BASE_URL") and not live:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAB_DATA_DIR", str(new_temp_dir(tmp_path_factory, "runs")))
    monkeypatch.setenv("LAB_CACHE_DIR", str(new_temp_dir(tmp_path_factory, "cache")))
    yield
