"""Kernel keyrings and bwrap's pid 1: what the seccomp filter and the /proc masks contain.

The session keyring is not namespaced: before the filter, a command inside
read a key the lab's user held in it, and a key one run added was read by
the next. bwrap's init (pid 1 inside) keeps the options it read from its
``--args`` descriptor in memory, where ``/proc/1/mem`` or ``ptrace`` found
the task copy's host path and the inner environment.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import secrets
import struct
import subprocess
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.sandbox import seccomp
from lab.sandbox.bwrap import BwrapBackend
from tests.helpers.sandboxed import run_launch

KEY_SPEC_SESSION = -3
KEY_SPEC_USER = -4
KEYCTL_SEARCH = 10
KEYCTL_READ = 11

# The inside half of every keyring attempt: add_key/keyctl through libc's syscall(),
# with the numbers of the host architecture (the filter's tables are the reference).
_INSIDE = """
import ctypes, json, os, platform
NR = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    ctypes.set_errno(0)
    r = libc.syscall(*args)
    return r, ctypes.get_errno()
out = {}
"""


def _host_nr() -> tuple[int, int]:
    import platform
    numbers = {"x86_64": (248, 250), "aarch64": (217, 219)}
    if platform.machine() not in numbers:
        pytest.skip(f"no syscall numbers for {platform.machine()} here")
    return numbers[platform.machine()]


def _add_host_key(description: str, secret: str, keyring: int) -> int:
    add_key, _ = _host_nr()
    libc = ctypes.CDLL(None, use_errno=True)
    key = libc.syscall(add_key, b"user", description.encode(), secret.encode(),
                       len(secret), ctypes.c_int(keyring))
    if key < 0:
        pytest.skip(f"this kernel refuses add_key: errno {ctypes.get_errno()}")
    return int(key)


def inside(bwrap: BwrapBackend, workspace: Path, code: str) -> subprocess.CompletedProcess[str]:
    launch = bwrap.wrap(["python3", "-c", _INSIDE + textwrap.dedent(code)],
                        workspace=workspace, env={})
    result = run_launch(launch)
    return subprocess.CompletedProcess(result.args, result.returncode,
                                       result.stdout.decode("utf-8", "replace"),
                                       result.stderr.decode("utf-8", "replace"))


def test_a_key_in_the_lab_session_keyring_is_unreachable_inside(bwrap: BwrapBackend,
                                                                workspace: Path) -> None:
    description = f"lab-test-{secrets.token_hex(4)}"
    secret = "sk-test-" + secrets.token_hex(16)
    host_key = _add_host_key(description, secret, KEY_SPEC_SESSION)
    _add_host_key(description, secret, KEY_SPEC_USER)
    result = inside(bwrap, workspace, f"""
        buf = ctypes.create_string_buffer(200)
        for ring in (-3, -4, -5):
            out[f"search {{ring}}"] = call(NR[1], 10, ctypes.c_long(ring), b"user", {description.encode()!r}, 0)
        out["read by id"] = call(NR[1], 11, ctypes.c_long({host_key}), buf, 200)
        out["buffer"] = buf.raw.rstrip(b"\\0").decode("latin-1")
        for path in ("/proc/keys", "/proc/key-users"):
            try:
                out[path] = open(path).read()
            except OSError as exc:
                out[path] = exc.errno
        print(json.dumps(out))
        """)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["search -3"] == found["search -4"] == found["search -5"] == [-1, errno.ENOSYS]
    assert found["read by id"] == [-1, errno.ENOSYS]
    assert found["/proc/keys"] == found["/proc/key-users"] == errno.EACCES
    assert secret not in result.stdout and description not in result.stdout


def test_a_key_one_run_plants_is_not_seen_by_the_next(bwrap: BwrapBackend,
                                                      workspace: Path) -> None:
    description = f"lab-plant-{secrets.token_hex(4)}"
    planted = inside(bwrap, workspace, f"""
        for ring in (-3, -4, -5):
            out[str(ring)] = call(NR[0], b"user", {description.encode()!r}, b"PLANTED", 7, ctypes.c_int(ring))
        print(json.dumps(out))
        """)
    assert planted.returncode == 0, planted.stderr
    assert set(map(tuple, json.loads(planted.stdout).values())) == {(-1, errno.ENOSYS)}
    looked = inside(bwrap, workspace, f"""
        for ring in (-3, -4, -5):
            out[str(ring)] = call(NR[1], 10, ctypes.c_long(ring), b"user", {description.encode()!r}, 0)
        print(json.dumps(out))
        """)
    assert set(map(tuple, json.loads(looked.stdout).values())) == {(-1, errno.ENOSYS)}
    # Nor did it reach the lab's own keyrings (the host side, without the filter).
    _, keyctl = _host_nr()
    libc = ctypes.CDLL(None, use_errno=True)
    for ring in (KEY_SPEC_SESSION, KEY_SPEC_USER):
        assert libc.syscall(keyctl, KEYCTL_SEARCH, ctypes.c_long(ring), b"user",
                            description.encode(), 0) == -1
    with open("/proc/keys") as keys:
        assert description not in keys.read()


def test_bwrap_pid_1_memory_and_ptrace_are_out_of_reach(bwrap: BwrapBackend,
                                                        workspace: Path) -> None:
    """The options bwrap read (host paths, the inner environment) stay in pid 1's memory."""
    result = inside(bwrap, workspace, """
        import subprocess
        PTR = {"x86_64": (101, 310, 434), "aarch64": (117, 270, 434)}[platform.machine()]
        for path in ("/proc/1/mem", "/proc/1/maps", "/proc/1/environ", "/proc/1/cmdline"):
            try:
                out[path] = len(open(path, "rb").read())
            except OSError as exc:
                out[path] = exc.errno
        out["seize 1"] = call(PTR[0], ctypes.c_long(0x4206), ctypes.c_long(1), 0, 0)
        out["seize 1, high bits set"] = call(PTR[0], ctypes.c_long(0x4206), ctypes.c_long((1 << 32) | 1), 0, 0)
        out["process_vm_readv 1"] = call(PTR[1], 1, 0, 0, 0, 0, 0)
        out["pidfd_open 1"] = call(PTR[2], 1, 0)
        out["listed"] = "1" in os.listdir("/proc")
        out["ppid"] = os.getppid()
        import signal
        for sig in (signal.SIGTERM, signal.SIGKILL):
            os.kill(1, sig)  # init ignores signals from inside its namespace
        child = subprocess.Popen(["sleep", "30"])
        out["seize own child"] = call(PTR[0], ctypes.c_long(0x4206), ctypes.c_long(child.pid), 0, 0)
        child.kill()
        child.wait()
        print(json.dumps(out))
        """)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    for path in ("/proc/1/mem", "/proc/1/maps", "/proc/1/environ", "/proc/1/cmdline"):
        assert found[path] == errno.ENOENT, (path, found[path])
    for call in ("seize 1", "seize 1, high bits set", "process_vm_readv 1", "pidfd_open 1"):
        assert found[call] == [-1, errno.EPERM], (call, found[call])
    assert found["seize own child"] == [0, 0], "debuggers still work on the command's own processes"
    assert found["listed"] and found["ppid"] == 1, "pid 1 exists, it is only out of reach"


# The filter program itself, on every architecture it covers --------------------------

def _run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...]) -> int:
    """A classic-BPF interpreter for the four instructions the filter uses."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *args)
    insns = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    for _ in range(len(insns)):
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")
    raise AssertionError("the program ran off its end")


def _expected(table: object, nr: int, args: tuple[int, ...], x86_64: bool) -> int:
    assert isinstance(table, seccomp._Table)
    if x86_64 and nr >= 0x40000000 or nr in table.keyring:
        return 0x50000 | errno.ENOSYS
    pid_arg = {table.ptrace: 1, table.vm_rw[0]: 0, table.vm_rw[1]: 0, table.pidfd_open: 0}
    if nr in pid_arg and args[pid_arg[nr]] & 0xFFFFFFFF == 1:
        return 0x50000 | errno.EPERM
    return 0x7FFF0000


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_decides_every_covered_architecture(machine: str) -> None:
    program = seccomp.filter_program(machine)
    assert program is not None
    for table in seccomp.HOST_TABLES[machine]:
        for nr in [*table.keyring, table.ptrace, *table.vm_rw, table.pidfd_open, 0, 1, 59, 221]:
            for pid in (1, 2, (7 << 32) | 1):
                args = (pid, pid, 0, 0, 0, 0)
                assert _run_bpf(program, nr, table.audit_arch, args) == \
                    _expected(table, nr, args, table is seccomp._X86_64), (machine, table.audit_arch, nr)


def test_an_unknown_host_architecture_gets_no_filter() -> None:
    assert seccomp.filter_program("riscv64") is None


@settings(max_examples=150, deadline=None)
@given(machine=st.sampled_from(["x86_64", "aarch64"]),
       arch=st.sampled_from([0xC000003E, 0x40000003, 0xC00000B7, 0x40000028, 0x80000016]),
       nr=st.one_of(st.integers(0, 600), st.integers(0x40000000, 0x40000300)),
       args=st.tuples(*[st.integers(0, 2**64 - 1) | st.sampled_from([1, 2**32 + 1])] * 6))
def test_the_filter_matches_its_tables(machine: str, arch: int, nr: int,
                                       args: tuple[int, ...]) -> None:
    """Any call on any architecture: the program decides as the tables say."""
    program = seccomp.filter_program(machine)
    assert program is not None
    tables = {table.audit_arch: table for table in seccomp.HOST_TABLES[machine]}
    decision = _run_bpf(program, nr, arch, args)
    if arch not in tables:
        assert decision == 0x50000 | errno.ENOSYS
    else:
        assert decision == _expected(tables[arch], nr, args, tables[arch] is seccomp._X86_64)


def test_the_filter_is_handed_over_on_a_descriptor_bwrap_closes(bwrap: BwrapBackend,
                                                               workspace: Path) -> None:
    launch = bwrap.wrap(["true"], workspace=workspace, env={})
    assert launch.seccomp == seccomp.filter_program()
    assert "--seccomp" in launch.fd_args and "--seccomp" not in launch.argv
    assert os.path.exists("/proc/keys") == ("/proc/keys" in launch.fd_args)
