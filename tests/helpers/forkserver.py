"""Start the lab's console scripts as real processes without paying Python's start and imports each time.

A lab or doit command spends about a second of CPU importing Hydra, OmegaConf,
jsonschema, doit and the lab before it does anything, and the tests start
hundreds of them. :func:`run` gives the same result as ``subprocess.run`` of
``.venv/bin/<script>`` with captured output, but the process is forked from a
server that imported those modules once (the technique of
``multiprocessing``'s ``forkserver`` start method):

- the command is still a separate process, with its own pid, environment,
  working directory, file descriptors 0–2, exit status and signals; it runs
  the console script's own file (``runpy``), so ``sys.exit(main())`` and
  every ``atexit`` handler run as in a fresh interpreter;
- what differs from a fresh interpreter: modules are already imported (a
  module that read the environment at import would see the server's; the lab
  reads it at run time), the report templates are compiled (jinja2 compiles
  one again when its file changed), the digests of the lab's own code are
  known (as a user's warm cache dir holds them; a test that edits the lab
  runs a copy of it in fresh processes), the parsers' tables are built (one
  configuration was composed), the secret scanner's plugins are imported and
  its patterns compiled, and ``PYTHONHASHSEED`` is the server's.

One server per test worker, started on first use and stopped when the worker
exits. Tests of the interpreter start itself (the README's quick start, the
Makefile, a terminal) keep using ``subprocess``.

Protocol, on a Unix socket: the client sends one JSON request with the fds of
the command's stdin, stdout and stderr (``SCM_RIGHTS``); the server forks a
supervisor, which forks the command, sends back its pid, waits for it and
sends its status. The server stays single-threaded, so every fork is of a
process with one thread; it reaps ended supervisors between requests and all
of them before it stops, so the commands' CPU time counts in the test
worker's ``RUSAGE_CHILDREN`` as a plain subprocess's would.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import io
import json
import os
import pkgutil
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PRELOAD = ("hydra.compose", "hydra.initialize", "hydra._internal.hydra", "hydra._internal.config_loader_impl",
           "hydra._internal.utils", "hydra.core.override_parser.overrides_parser", "doit.doit_cmd", "doit.cmd_run",
           "doit.cmd_base", "doit.loader", "jsonschema", "jinja2", "tabulate", "httpx", "rich.console",
           "rich.progress", "yaml", "regex", "detect_secrets", "scipy.stats", "tomllib")
"""Modules the server imports before it forks, besides every ``lab`` module: what commands import anyway."""


# ---------------------------------------------------------------- the server (a process of its own)

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
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
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


# ---------------------------------------------------------------- the client (in the test worker)

class _Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="lab-forkserver-")
        self.address = os.path.join(self.dir, "socket")
        env = dict(_SERVER_ENV)
        self.log = open(os.path.join(self.dir, "server.log"), "w+b")  # noqa: SIM115 (lives as long as the server)
        self.process = subprocess.Popen([sys.executable, __file__, self.address], cwd=ROOT, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != b"ready":
            self.log.seek(0)
            raise RuntimeError(f"forkserver did not start: {self.log.read().decode(errors='replace')[-2000:]}")
        self.process.stdout.close()

    def stop(self) -> None:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(self.address)
                _send(sock, {"stop": True}, [])
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_server: _Server | None = None
_lock = threading.Lock()
_SERVER_ENV = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
"""The server's environment: this worker's as it started, before any test changed it."""


def _interpreter_settings(env: dict[str, str]) -> dict[str, str]:
    """What an interpreter reads as it starts (``PYTHONPATH``, ``PYTHONWARNINGS`` …): a fork inherits the server's."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k != "PYTHONUNBUFFERED"}


def _get_server() -> _Server:
    global _server
    with _lock:
        if _server is None or _server.process.poll() is not None:
            _server = _Server()
            atexit.register(_server.stop)
        return _server


def shutdown() -> None:
    """Stop this worker's server, if one started, once its commands ended (``pytest_unconfigure``)."""
    global _server
    with _lock:
        if _server is not None:
            atexit.unregister(_server.stop)
            _server.stop()
            _server = None


def _send(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    data = json.dumps(request).encode()
    sock.sendall(len(data).to_bytes(8, "big"))
    socket.send_fds(sock, [data], fds)


def _read_line(sock: socket.socket, deadline_s: float | None) -> dict[str, Any]:
    sock.settimeout(deadline_s)
    data = b""
    while not data.endswith(b"\n"):
        more = sock.recv(1)  # a byte at a time: the status line may follow the pid line at once
        if not more:
            raise RuntimeError("forkserver: the supervisor ended without a status")
        data += more
    return dict(json.loads(data))


def _drain(out_fd: int, err_fd: int, input_bytes: bytes | None, in_fd: int | None,
           timeout_s: float | None) -> tuple[bytes, bytes, bool]:
    """Read both pipes to their end (and feed stdin), like ``Popen.communicate``; False when the time ran out."""
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    selector = selectors.DefaultSelector()
    selector.register(out_fd, selectors.EVENT_READ)
    selector.register(err_fd, selectors.EVENT_READ)
    pending = memoryview(input_bytes or b"")
    if in_fd is not None:
        if pending:
            os.set_blocking(in_fd, False)
            selector.register(in_fd, selectors.EVENT_WRITE)
        else:
            os.close(in_fd)
    end = None if timeout_s is None else time.monotonic() + timeout_s
    open_reads = 2
    while open_reads:
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), False
        for key, _ in selector.select(left):
            fd = int(key.fd)  # type: ignore[arg-type]
            if fd == in_fd:
                try:
                    written = os.write(fd, pending[:65536])
                except BrokenPipeError:
                    written = len(pending)
                pending = pending[written:]
                if not pending:
                    selector.unregister(fd)
                    os.close(fd)
                continue
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                selector.unregister(fd)
                open_reads -= 1
    selector.close()
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), True


def run(argv: list[str], *, env: dict[str, str], cwd: Path | str = ROOT, timeout: float | None = 300,
        input: str | None = None, stdin: int | None = None, mounts: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``.venv/bin/<argv[0]>`` with ``argv[1:]`` as ``subprocess.run(…, capture_output=True, text=True)``.

    ``argv[0]`` names a console script of the virtualenv (``lab``, ``doit``), or
    is the absolute path of a Python script. A command whose ``PYTHON*``
    variables differ from the server's starts as a fresh interpreter.
    stdin is ``/dev/null`` unless ``input`` is given, or ``stdin`` (a file
    descriptor, e.g. a pty's, which stays open here). ``mounts``: a shell
    script the command's process runs first in a mount namespace of its own
    (as ``unshare -m sh -c 'MOUNTS && exec COMMAND'``; needs the right to
    mount). Raises ``subprocess.TimeoutExpired`` after killing the command
    when ``timeout`` seconds pass, as ``subprocess.run`` does.
    """
    script = BIN / argv[0]  # an absolute path stays as it is
    if not script.is_file():
        raise FileNotFoundError(script)
    if _interpreter_settings(env) != _interpreter_settings(_SERVER_ENV):  # only a fresh interpreter honours them
        if mounts:
            raise ValueError("run: mounts= with PYTHON* settings other than the server's")
        return subprocess.run([sys.executable, str(script), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                              input=input, stdin=subprocess.DEVNULL if input is None and stdin is None else stdin,
                              timeout=timeout, check=False)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if stdin is not None:
        in_r, in_w = os.dup(stdin), None
    elif input is None:
        in_r, in_w = os.open(os.devnull, os.O_RDONLY), None
    else:
        in_r, in_w = os.pipe()
    request = {"argv": [str(script), *argv[1:]], "script": str(script), "env": env, "cwd": str(cwd), "mounts": mounts}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(_get_server().address)
        try:
            _send(sock, request, [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        pid = int(_read_line(sock, 60)["pid"])
        try:
            out, err, finished = _drain(out_r, err_r, None if input is None else input.encode(), in_w, timeout)
        finally:
            os.close(out_r)
            os.close(err_r)
        if not finished:
            os.kill(pid, signal.SIGKILL)
            _read_line(sock, 60)
            raise subprocess.TimeoutExpired([str(script), *argv[1:]], timeout or 0, out, err)
        returncode = int(_read_line(sock, None)["returncode"])
    return subprocess.CompletedProcess([str(script), *argv[1:]], returncode, _text(out), _text(err))


class Started:
    """A command :func:`start` forked, used like ``subprocess.Popen(…, stdout=PIPE, stderr=PIPE, text=True)``:
    ``pid``, ``stdout`` and ``stderr`` (text files to read as the command writes), ``send_signal``, ``kill``,
    ``wait``, ``communicate`` and ``returncode`` (None until :meth:`wait` or :meth:`communicate` saw the end)."""

    def __init__(self, args: list[str], sock: socket.socket, pid: int, out_r: int, err_r: int) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = open(out_r, encoding=None)  # noqa: SIM115 (closed by communicate); text=True's decoding
        self.stderr = open(err_r, encoding=None)  # noqa: SIM115
        self._sock = sock

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the command unless it was seen to end."""
        if self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        """The command's exit status (``subprocess.TimeoutExpired`` after ``timeout`` seconds, still running)."""
        if self.returncode is None:
            try:
                self.returncode = int(_read_line(self._sock, timeout)["returncode"])
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
            self._sock.close()
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Read both outputs to their end, then wait for the status; ``(stdout, stderr)``, the text not read yet."""
        err: list[str] = []
        reader = threading.Thread(target=lambda: err.append(self.stderr.read()), daemon=True)
        reader.start()
        end = None if timeout is None else time.monotonic() + timeout
        out = self.stdout.read()
        reader.join(None if end is None else max(0.0, end - time.monotonic()))
        if reader.is_alive():
            raise subprocess.TimeoutExpired(self.args, timeout or 0, out)
        self.stdout.close()
        self.stderr.close()
        self.wait(None if end is None else max(0.0, end - time.monotonic()))
        return out, err[0]


def start(argv: list[str], *, env: dict[str, str], cwd: Path | str = ROOT) -> Started:
    """Start ``.venv/bin/<argv[0]>`` with ``argv[1:]`` and return at once, as ``subprocess.Popen`` with
    ``stdout=PIPE, stderr=PIPE, text=True`` and stdin ``/dev/null`` would (see :class:`Started`): for
    commands that run at once, or whose output a test reads while they run."""
    script = BIN / argv[0]
    if not script.is_file():
        raise FileNotFoundError(script)
    if _interpreter_settings(env) != _interpreter_settings(_SERVER_ENV):  # only a fresh interpreter honours them
        raise ValueError("start: PYTHON* settings other than the server's need subprocess.Popen")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r = os.open(os.devnull, os.O_RDONLY)
    args = [str(script), *argv[1:]]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(_get_server().address)
        try:
            _send(sock, {"argv": args, "script": str(script), "env": env, "cwd": str(cwd)}, [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        pid = int(_read_line(sock, 60)["pid"])
    except BaseException:
        sock.close()
        os.close(out_r)
        os.close(err_r)
        raise
    return Started(args, sock, pid, out_r, err_r)


def _text(data: bytes) -> str:
    """Decode as ``text=True`` does: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), errors="replace").read()


if __name__ == "__main__":
    import ctypes
    import runpy

    sys.path[0] = str(BIN)  # as for a console script: its own directory first, never tests/helpers
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: end with the test worker
    job = serve(sys.argv[1])
    if job:
        del serve  # the command's namespace is the script's own, as in a fresh start
        runpy.run_path(job, run_name="__main__")
