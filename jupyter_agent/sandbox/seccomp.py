"""A seccomp filter that closes Unix sockets when the sandbox has no network (docs/sandbox.md).

A new network namespace cuts the network and abstract Unix sockets, but not a socket *file* in
the workspace (a Jupyter server, a database or an agent listening there): ``connect`` to a
path needs only write permission on the socket file, which the command has. So without the
network, creating an ``AF_UNIX`` socket fails with ``EACCES`` (``socketpair`` still works:
pipes between a command's own processes are harmless), and ``io_uring``, which could create
a socket without the ``socket`` system call, is refused.

The filter is classic BPF, built here for x86-64 (with x32 and i386) and AArch64; bubblewrap
loads it (``--seccomp FD``). On any other architecture there is no filter and docs/sandbox.md
says so.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

__all__ = ["unix_socket_filter", "filter_fd"]

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_AND_K = 0x54
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_X86_64, _I386, _AARCH64 = 0xC000003E, 0x40000003, 0xC00000B7
_X32_BIT = 0x40000000
_AF_UNIX = 1
_IO_URING_SETUP = 425  # the same number on every architecture since Linux 5.1
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little-endian low word)


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _arch_block(socket_nrs: tuple[int, ...], socketcall: int | None, mask_x32: bool) -> bytes:
    """Instructions for one architecture, ending in a return; entered with nothing loaded."""
    deny = _ins(_RET_K, _ERRNO | errno.EACCES)
    allow = _ins(_RET_K, _ALLOW)
    out = [_ins(_LD_W_ABS, _NR)]
    if mask_x32:
        out.append(_ins(_AND_K, 0xFFFFFFFF ^ _X32_BIT))
    # io_uring_setup: deny
    out.append(_ins(_JEQ_K, _IO_URING_SETUP, 0, 1))
    out.append(deny)
    if socketcall is not None:  # i386 socketcall(SYS_SOCKET=1, args): the domain is not visible
        out.append(_ins(_JEQ_K, socketcall, 0, 3))
        out.append(_ins(_LD_W_ABS, _ARG0))
        out.append(_ins(_JEQ_K, 1, 0, 1))
        out.append(deny)
        out.append(_ins(_LD_W_ABS, _NR))  # reload for the next test
    for nr in socket_nrs:
        out.append(_ins(_JEQ_K, nr, 0, 3))
        out.append(_ins(_LD_W_ABS, _ARG0))
        out.append(_ins(_JEQ_K, _AF_UNIX, 0, 1))
        out.append(deny)
        out.append(_ins(_LD_W_ABS, _NR))
    out.append(allow)
    return b"".join(out)


def unix_socket_filter() -> bytes | None:
    """The filter program (an array of ``struct sock_filter``), or None on an architecture we
    do not build one for."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        blocks = [(_X86_64, _arch_block((41,), None, True)),
                  (_I386, _arch_block((359,), 102, False))]
    elif machine in ("aarch64", "arm64"):
        blocks = [(_AARCH64, _arch_block((198,), None, False))]
    else:
        return None
    prog = b""
    # Built from the end: each arch test jumps over its block to the next test when unequal.
    tail = _ins(_RET_K, _ALLOW)  # an architecture we did not expect: nothing to filter
    for arch, block in reversed(blocks):
        n = len(block) // 8
        tail = _ins(_LD_W_ABS, _ARCH) + _ins(_JEQ_K, arch, 0, n) + block + tail
    prog = tail
    assert len(prog) // 8 < 256, "jump offsets must fit in a byte"
    return prog


def filter_fd() -> int | None:
    """A pipe's read end holding the filter, for ``bwrap --seccomp FD`` (the caller closes
    it after starting bwrap), or None when there is no filter for this architecture."""
    prog = unix_socket_filter()
    if prog is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, prog)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
