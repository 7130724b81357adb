"""Keep freed tensor memory in the process instead of handing it back to the OS.

Small reward networks allocate and free the same few megabytes on every step. glibc's
defaults return large blocks to the kernel (``mmap``/trim) and take them back at the next
step, paying a page fault per 4 KiB touched — on virtual machines that alone can cost
more than the arithmetic (measured here: ReLU backward on a 2 MB tensor went from 1.4 ms to
0.3 ms). Raising the mmap and trim thresholds with ``mallopt`` keeps those blocks on the
heap for reuse. It is process-wide and only affects when memory returns to the OS.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


@functools.cache
def keep_freed_memory(mmap_threshold: int = 32 * 2**20, trim_threshold: int = 2**30) -> bool:
    """Raise glibc's mmap/trim thresholds once per process; returns whether it applied."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return False
    ok = mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1
    ok &= mallopt(_M_TRIM_THRESHOLD, trim_threshold) == 1
    ok &= mallopt(_M_TOP_PAD, 64 * 2**20) == 1
    return bool(ok)
