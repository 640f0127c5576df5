"""The seccomp filter every bwrap sandbox's command runs under.

Two things the namespaces do not separate:

- **Kernel keyrings.** The session keyring is inherited across fork and
  exec and is not namespaced, so a command would read a key the lab's user
  holds in it (``keyctl search @s user NAME``) and a key one run adds would
  be read by the next. The filter makes ``add_key``, ``request_key`` and
  ``keyctl`` fail with ``ENOSYS`` (what a kernel without keyrings answers;
  libraries fall back to files): no keyring is reachable inside, so runs
  share nothing through one.
- **bwrap's pid 1.** The options bwrap read from its ``--args`` descriptor
  (host paths, the inner environment) stay in the memory of its init
  process, pid 1 inside. ``/proc/1`` is hidden by a mount (see ``bwrap.py``)
  and the filter makes ``ptrace``, ``process_vm_readv``,
  ``process_vm_writev`` and ``pidfd_open`` with pid 1 fail with ``EPERM``;
  the same calls on the command's own processes work (debuggers run).

The program is classic BPF (``struct sock_filter``, Linux
``include/uapi/linux/filter.h`` and ``seccomp.h``), passed to bubblewrap
with ``--seccomp FD``. It checks the audit architecture of every call: the
host's native one and its 32-bit compat one (x86_64 and i386, aarch64 and
arm) each get their own syscall numbers; x32 calls (x86_64 numbers with bit
30 set) and any other architecture fail with ``ENOSYS``. Only the low 32
bits of a pid argument are compared: the kernel reads a ``pid_t`` (int)
from the 64-bit register.

May import: the standard library only.
"""

from __future__ import annotations

import errno
import platform
import struct

# BPF opcodes (linux/bpf_common.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20       # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00          # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00          # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06 | 0x00                 # BPF_RET | BPF_K

_RET_ALLOW = 0x7FFF0000              # SECCOMP_RET_ALLOW
_RET_ERRNO = 0x00050000              # SECCOMP_RET_ERRNO | errno

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG1_LOW = 16 + 8 * 1           # little-endian: the low word comes first
_OFF_ARG0_LOW = 16 + 8 * 0

_X32_BIT = 0x40000000


class _Table:
    """The numbers of the filtered calls on one audit architecture."""

    def __init__(self, audit_arch: int, keyring: tuple[int, ...], ptrace: int,
                 vm_rw: tuple[int, int], pidfd_open: int) -> None:
        self.audit_arch = audit_arch
        self.keyring = keyring          # add_key, request_key, keyctl
        self.ptrace = ptrace            # pid is argument 1
        self.vm_rw = vm_rw              # process_vm_readv/writev: pid is argument 0
        self.pidfd_open = pidfd_open    # pid is argument 0


# Numbers from the kernel's syscall tables: arch/x86/entry/syscalls/syscall_64.tbl and
# syscall_32.tbl, include/uapi/asm-generic/unistd.h (aarch64), arch/arm/tools/syscall.tbl.
_X86_64 = _Table(0xC000003E, (248, 249, 250), 101, (310, 311), 434)
_I386 = _Table(0x40000003, (286, 287, 288), 26, (347, 348), 434)
_AARCH64 = _Table(0xC00000B7, (217, 218, 219), 117, (270, 271), 434)
_ARM = _Table(0x40000028, (309, 310, 311), 26, (376, 377), 434)

HOST_TABLES: dict[str, tuple[_Table, ...]] = {
    "x86_64": (_X86_64, _I386),
    "amd64": (_X86_64, _I386),
    "aarch64": (_AARCH64, _ARM),
    "arm64": (_AARCH64, _ARM),
}
"""Host machine (``platform.machine()``) to the architectures its filter covers."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _arch_block(table: _Table, *, native_x86_64: bool) -> list[tuple[int, int, int, int]]:
    """Instructions for calls of one architecture; every path ends in a return.

    Jumps are relative, so each block is written with its own offsets and
    returns on every path (nothing falls through into the next block).
    """
    deny_key = _RET_ERRNO | errno.ENOSYS
    deny_pid1 = _RET_ERRNO | errno.EPERM
    out: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _OFF_NR)]
    if native_x86_64:
        out.append((_JGE_K, 0, 1, _X32_BIT))        # x32 call: refused
        out.append((_RET_K, 0, 0, deny_key))
    for number in table.keyring:
        out.append((_JEQ_K, 0, 1, number))
        out.append((_RET_K, 0, 0, deny_key))
    pid_checks = [(table.ptrace, _OFF_ARG1_LOW), (table.vm_rw[0], _OFF_ARG0_LOW),
                  (table.vm_rw[1], _OFF_ARG0_LOW), (table.pidfd_open, _OFF_ARG0_LOW)]
    for number, offset in pid_checks:
        # if nr == number: load the pid; pid == 1 ? deny : allow. Else skip these 4.
        out.append((_JEQ_K, 0, 4, number))
        out.append((_LD_W_ABS, 0, 0, offset))
        out.append((_JEQ_K, 0, 1, 1))
        out.append((_RET_K, 0, 0, deny_pid1))
        out.append((_RET_K, 0, 0, _RET_ALLOW))
    out.append((_RET_K, 0, 0, _RET_ALLOW))
    return out


def filter_program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` as bubblewrap's ``--seccomp`` reads it.

    Args:
        machine: ``platform.machine()`` of the host; the running host when None.

    Returns:
        The ``struct sock_filter`` array (8 bytes per instruction, native
        byte order), or None on a host architecture without a table here
        (then no filter is applied; docs/sandbox.md says what that leaves open).
    """
    tables = HOST_TABLES.get((machine or platform.machine()).lower())
    if tables is None:
        return None
    blocks = [_arch_block(table, native_x86_64=table is _X86_64) for table in tables]
    program: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _OFF_ARCH)]
    # One dispatch per architecture: jump over the later dispatches to its block.
    dispatch_len = 1 + len(tables)  # the dispatch jumps plus the final "unknown arch" return
    offsets = []
    position = 0
    for block in blocks:
        offsets.append(position)
        position += len(block)
    for index, table in enumerate(tables):
        remaining_dispatch = dispatch_len - index - 1
        program.append((_JEQ_K, remaining_dispatch + offsets[index], 0, table.audit_arch))
    program.append((_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS))  # an architecture not covered
    for block in blocks:
        program.extend(block)
    return b"".join(_insn(*insn) for insn in program)
