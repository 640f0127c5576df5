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
import io
import json
import os
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
SERVER = Path(__file__).with_name("forkserver_main.py")
"""The server's program (a process of its own)."""



class _Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="lab-forkserver-")
        self.address = os.path.join(self.dir, "socket")
        env = dict(_SERVER_ENV)
        self.log = open(os.path.join(self.dir, "server.log"), "w+b")  # noqa: SIM115 (lives as long as the server)
        self.process = subprocess.Popen([sys.executable, str(SERVER), self.address], cwd=ROOT, env=env,
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
            fd = int(key.fd)
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


def start(argv: list[str], *, env: dict[str, str], cwd: Path | str = ROOT, session: bool = False) -> Started:
    """Start ``.venv/bin/<argv[0]>`` with ``argv[1:]`` and return at once, as ``subprocess.Popen`` with
    ``stdout=PIPE, stderr=PIPE, text=True`` and stdin ``/dev/null`` would (see :class:`Started`): for
    commands that run at once, or whose output a test reads while they run. ``session``: the command
    starts a session of its own (``start_new_session=True``), its pid the process group's id."""
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
            _send(sock, {"argv": args, "script": str(script), "env": env, "cwd": str(cwd), "session": session},
                  [in_r, out_w, err_w])
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
