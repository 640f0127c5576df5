"""The sandbox interface, the registry, auto resolution and the none backend."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

import pytest

from lab.errors import LabError
from lab.sandbox.base import Bind, Launch, Limits, SandboxBackend, SandboxError, check_request
from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.none import NoneBackend
from lab.sandbox.process import run_launch
from lab.sandbox.registry import (
    known_backends,
    register_backend,
    resolve_backend,
    unregister_backend,
)
from tests.helpers.sandboxed import require_bwrap


def test_sandbox_error_is_a_lab_error() -> None:
    assert issubclass(SandboxError, LabError)


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(SandboxError) as info:
        resolve_backend("docker")
    assert str(info.value) == "unknown sandbox backend 'docker'; known: auto, bwrap, none"


def test_none_resolves_without_warning() -> None:
    resolved = resolve_backend("none")
    assert resolved.backend.name == "none" and resolved.warning is None


class _Recorder:
    """A third backend as a container backend would plug in (records its calls)."""

    name = "recorder"

    def inside_path(self, workspace: Path) -> PurePosixPath:
        return PurePosixPath("/task")

    def prepare(self, path: Path) -> None:
        pass

    def wrap(self, argv: Sequence[str], *, workspace: Path, env: Mapping[str, str],
             network: bool = False, limits: Limits = Limits(),
             binds: Sequence[Bind] = ()) -> Launch:
        return Launch(argv=["echo", *argv], env=dict(env), cwd=workspace)


@pytest.fixture
def recorder() -> Iterator[str]:
    register_backend("recorder", _Recorder)
    yield "recorder"
    unregister_backend("recorder")


def test_a_registered_backend_is_resolved_by_name(recorder: str) -> None:
    resolved = resolve_backend(recorder)
    assert isinstance(resolved.backend, SandboxBackend)
    assert recorder in known_backends()


@pytest.mark.parametrize("name", ["auto", "bwrap", "none", "Bad Name", ""])
def test_register_refuses_taken_or_malformed_names(name: str) -> None:
    with pytest.raises(SandboxError, match="expected a new lower-case name"):
        register_backend(name, NoneBackend)


def test_auto_without_bwrap_falls_back_to_none_naming_the_fix(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no bwrap on PATH
    resolved = resolve_backend("auto")
    assert resolved.backend.name == "none"
    assert resolved.warning == ("sandbox: bwrap not found; commands run UNSANDBOXED on the "
                                "host (sandbox=none); install it: apt-get install bubblewrap")


def test_explicit_bwrap_without_bwrap_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        resolve_backend("bwrap")


def test_auto_with_a_broken_bwrap_falls_back_with_its_reason(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "bubblewrap 0.8.0"; exit 0; fi\n'
                    'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.defpath}")
    resolved = resolve_backend("auto")
    assert resolved.backend.name == "none"
    assert resolved.warning is not None
    assert resolved.warning.startswith(f"sandbox: {fake} cannot start a sandbox here: ")
    assert resolved.warning.endswith("commands run UNSANDBOXED on the host (sandbox=none); "
                                     "see docs/sandbox.md")


@pytest.mark.parametrize("field", ["max_processes", "max_file_size_bytes", "max_open_files",
                                   "cpu_time_s", "tmpfs_size_bytes"])
@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_limits_refuse_non_positive_or_non_integer(field: str, value: object) -> None:
    with pytest.raises(SandboxError, match=f"sandbox limit {field}: expected an integer >= 1"):
        Limits(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("target", ["relative/path", "/run/../etc/passwd"])
def test_bind_target_must_be_absolute_without_dotdot(target: str) -> None:
    with pytest.raises(SandboxError, match="target must be an absolute path"):
        Bind(Path("/tmp"), PurePosixPath(target))


@pytest.mark.parametrize("argv, env, message", [
    ([], {}, "argv must be a non-empty list of strings"),
    (["true"], {"BAD-NAME": "x"}, "env variable 'BAD-NAME'"),
    (["true"], {"OK": "a\x00b"}, "env variable 'OK'"),
])
def test_check_request_refuses_bad_requests(tmp_path: Path, argv: list[str],
                                            env: dict[str, str], message: str) -> None:
    with pytest.raises(SandboxError, match=message):
        check_request(argv, tmp_path, env)


def test_check_request_refuses_a_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="is not a directory"):
        check_request(["true"], tmp_path / "missing", {})


def test_none_keeps_argv_and_runs_in_the_task_copy(tmp_path: Path) -> None:
    backend = NoneBackend(host_env={"PATH": "/usr/bin:/bin", "FAKE_API_KEY": "sk-test-x"})
    launch = backend.wrap(["python3", "check.py"], workspace=tmp_path, env={"TASK": "1"},
                          network=False, limits=Limits(max_processes=1))
    assert launch.argv == ["python3", "check.py"]
    assert launch.cwd == tmp_path.resolve()
    assert launch.env == {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path.resolve()),
                          "TMPDIR": launch.env["TMPDIR"], "LANG": "C.UTF-8", "TZ": "UTC",
                          "PYTHONDONTWRITEBYTECODE": "1", "TASK": "1"}
    assert backend.inside_path(tmp_path) == PurePosixPath(tmp_path.resolve())


def test_none_runs_a_real_command_without_the_lab_environment(tmp_path: Path,
                                                              planted_key: str) -> None:
    backend = NoneBackend()
    launch = backend.wrap([sys.executable, "-c", "import os; print(sorted(os.environ))"],
                          workspace=tmp_path, env={})
    result = run_launch(launch, timeout_ms=30_000)
    assert result.exit_code == 0
    assert planted_key.encode() not in result.stdout
    assert b"FAKE_API_KEY" not in result.stdout


def test_bwrap_backend_without_bwrap_names_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="install it: apt-get install bubblewrap"):
        BwrapBackend()


def test_bwrap_backend_refuses_an_unreadable_version(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho nonsense\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxError, match="cannot read the version"):
        BwrapBackend(executable=str(fake))


def test_launch_env_of_bwrap_holds_nothing_of_the_lab(bwrap: BwrapBackend,
                                                      workspace: Path, planted_key: str) -> None:
    launch = bwrap.wrap(["env"], workspace=workspace, env={"TASK_VAR": "1"})
    assert sorted(launch.env) == ["HOME", "LANG", "LOGNAME", "PATH", "PYTHONDONTWRITEBYTECODE",
                                  "TASK_VAR", "TMPDIR", "TZ", "USER"]
    assert planted_key not in " ".join([*launch.argv, *launch.fd_args])


@pytest.mark.parametrize("host_uid", [0, -1])
def test_bwrap_backend_refuses_root_as_the_sandbox_host_uid(host_uid: int) -> None:
    with pytest.raises(SandboxError, match="host_uid must be a non-root uid"):
        BwrapBackend(host_uid=host_uid)


def test_under_ci_a_missing_bwrap_fails_the_sandbox_tests_instead_of_skipping(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set but bwrap is missing"):
        require_bwrap()


def test_outside_ci_a_missing_bwrap_skips_naming_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install bubblewrap"):
        require_bwrap()
