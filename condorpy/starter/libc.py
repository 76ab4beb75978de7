"""The C library, for the few calls Python's ``os`` lacks: prctl (the child subreaper),
the per-thread credential system calls, and the launcher's."""

from __future__ import annotations

import ctypes
import functools
import os


@functools.cache
def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def check(result: int) -> None:
    """Raise the call's errno as OSError when it failed (a non-zero result)."""
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
