"""How an offline command's process gets its memory: freed blocks kept for reuse.

A replay works chunk by chunk, and each chunk's arrays (decoded readings, the
rows' matrix, the loop's outputs) are megabytes. glibc's ``malloc`` serves a block
that large with its own ``mmap`` and gives it back with ``munmap`` when freed
(its threshold rises to a freed block's size, but a block *as large* is mapped
again), so every chunk's arrays were fresh pages, each faulted in and zeroed by
the kernel: a fresh ``edgelearn replay`` process spent about a third of its
replay time there (``perf record``: ``clear_page_erms``), which a warm process
replaying a second time did not (issue 25: the command's 35% more CPU than the
same work in process).

:func:`reuse_freed_memory` has ``malloc`` serve blocks up to 32 MiB from its heap
and keep freed memory instead of handing it back, so the next chunk reuses pages
already faulted in. It is for a process that runs one offline job and exits (the
``replay`` command); it changes nothing but where memory comes from and when it
is returned, and is a no-op where the C library has no ``mallopt`` (not glibc).
"""

from __future__ import annotations

import ctypes

__all__ = ["reuse_freed_memory"]

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Blocks up to this size come from the heap (glibc's largest accepted value on 64-bit).
MMAP_THRESHOLD = 32 * 1024 * 1024
#: Free memory at the heap's top kept before any is returned to the system.
TRIM_THRESHOLD = 512 * 1024 * 1024


def reuse_freed_memory() -> bool:
    """Keep freed memory for reuse in this process (see the module's text). True
    when the C library took both settings."""
    try:
        # the process's own symbols, the C library's among them (find_library
        # would run ldconfig)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
