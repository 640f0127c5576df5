"""The fork server's own process (``python forkserver_main.py SOCKET``): see :mod:`tests.helpers.forkserver`.

It imports what the lab's commands import, prepares what they compute once,
then forks a supervisor per request, which forks the command and reports its
pid and exit status; :mod:`tests.helpers.forkserver` is the client the tests use.
"""

from __future__ import annotations

import gc
import importlib
import io
import json
import os
import pkgutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
PRELOAD = ("hydra.compose", "hydra.initialize", "hydra._internal.hydra", "hydra._internal.config_loader_impl",
           "hydra._internal.utils", "hydra.core.override_parser.overrides_parser", "doit.doit_cmd", "doit.cmd_run",
           "doit.cmd_base", "doit.loader", "jsonschema", "jinja2", "tabulate", "httpx", "rich.console",
           "rich.progress", "yaml", "regex", "detect_secrets", "scipy.stats", "tomllib")
"""Modules the server imports before it forks, besides every ``lab`` module: what commands import anyway."""


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    size = int.from_bytes(conn.recv(8, socket.MSG_WAITALL), "big")
    head, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    data = head
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise EOFError("request cut short")
        data += more
    return json.loads(data), fds


def _stdio(fds: list[int], unbuffered: bool) -> None:
    """Make fds 0–2 the command's and give Python fresh stdio objects over them, as at start."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    old = sys.stdout
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),  # type: ignore[misc]
                                                 encoding=sys.stdin.encoding, errors=sys.stdin.errors)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(fd, "w", closefd=False)
        binary: Any = raw if unbuffered else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(binary, encoding=old.encoding, errors="backslashreplace" if fd == 2 else old.errors,
                                  line_buffering=fd == 2 or raw.isatty(), write_through=unbuffered)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _become_command(request: dict[str, Any], fds: list[int]) -> str:
    """In the forked command: take its stdio, directory, environment and argv; return the script to run."""
    _stdio(fds, bool(request["env"].get("PYTHONUNBUFFERED")))
    if request.get("session"):
        os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    if request.get("mounts"):
        _private_mounts(str(request["mounts"]))
    sys.argv = list(request["argv"])
    return str(request["script"])


CLONE_NEWNS = 0x00020000


def _private_mounts(script: str) -> None:
    """Move this process into a mount namespace of its own (as ``unshare -m`` does: every mount private),
    then run the shell ``script`` there (its mounts); on failure say why on stderr and exit 1."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNS) != 0:
        print(f"forkserver: unshare: {os.strerror(ctypes.get_errno())}", file=sys.stderr, flush=True)
        os._exit(1)
    for argv in (["mount", "--make-rprivate", "/"], ["sh", "-c", script]):
        if subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode != 0:
            print(f"forkserver: {' '.join(argv)} failed", file=sys.stderr, flush=True)
            os._exit(1)


def _reap(block: bool) -> None:
    """Wait for ended supervisors (all of them when ``block``)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(address: str) -> str:
    """Accept requests until told to stop; returns only in a forked command, with the script it must run."""
    os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")  # numpy's BLAS: no thread pool to fork
    for name in PRELOAD:
        __import__(name)
    import lab

    for module in pkgutil.walk_packages(lab.__path__, "lab."):
        if "ray" not in module.name and not module.name.endswith("__main__"):  # Ray: imported by its own tests
            importlib.import_module(module.name)
    from lab.execute.harness import harness_digest, report_code_digest
    from lab.report.evidence import environment

    # The code digests every eval computes once per process (by the lab's sources, which no test edits in
    # place); a user's command finds them in its cache dir, a test's fresh one would tokenize every source.
    os.environ["LAB_CACHE_DIR"] = os.path.join(os.path.dirname(address), "cache")
    harness_digest()
    report_code_digest()
    del os.environ["LAB_CACHE_DIR"]

    # Hydra's override parser and OmegaConf's interpolation grammar (ANTLR) build their lexing and parsing
    # tables on first use and keep them for the process, as do jsonschema's checkers of the config schema:
    # one composition here (nothing of it is remembered on disk) saves every forked command about 0.15 s of CPU.
    from lab.config.compose import compose_config

    compose_config(["suite=core", "provider=scripted", "k=2", r"agent.system_prompt='a \${x} b'"])
    # detect-secrets loads its plugins (and compiles their patterns) on first use: every saved config is scanned.
    from lab.export.secrets import find_secrets

    find_secrets({"text": "sk-proj-0123456789abcdefABCDEF0123456789abcd"}, env={})

    templates = environment()  # compiled once here; jinja2 compiles a template again when its file changes
    for name in templates.list_templates():
        templates.get_template(name)
    gc.freeze()  # the preloaded objects stay out of every collection: no copy-on-write of their pages
    if threading.active_count() != 1:
        raise SystemExit(f"forkserver: preloading started threads ({threading.enumerate()}); cannot fork safely")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        _reap(block=False)
        conn, _ = listener.accept()
        try:
            request, fds = _recv_request(conn)
        except (OSError, EOFError, ValueError):
            conn.close()
            continue
        if request.get("stop"):
            _reap(block=True)  # so the CPU time of every command counts in this process's (and the tests') rusage
            return ""
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:  # the supervisor
            listener.close()
            pid = os.fork()
            if pid == 0:
                conn.close()
                return _become_command(request, fds)
            for fd in fds:
                os.close(fd)
            try:
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                _, status = os.waitpid(pid, 0)
                conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    import ctypes
    import runpy

    sys.path[0] = str(BIN)  # as for a console script: its own directory first, never tests/helpers
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: end with the test worker
    job = serve(sys.argv[1])
    if job:
        del serve  # the command's namespace is the script's own, as in a fresh start
        runpy.run_path(job, run_name="__main__")
