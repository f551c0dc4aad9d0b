"""Handing freed memory back to the system between the phases of a training task.

A training task's peak resident memory is what LinearSVC keeps under 2x the CSR a task
holds. glibc's malloc raises its mmap threshold each time a large block is freed
(up to 32 MiB), so later arrays of a few MB come from the heap and, once freed, stay
resident; a round's fresh large arrays then land on top of that. ``release_freed()`` returns
those pages (``malloc_trim(0)``: every free page of every arena) and pyarrow's unused pool
memory. It never changes a result, only the process's footprint, and is a no-op where glibc
is absent.
"""
from __future__ import annotations

import ctypes
import ctypes.util

_libc = None


def _trim_fn():
    global _libc
    if _libc is None:
        _libc = False
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            fn = lib.malloc_trim
            fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
            _libc = fn
        except (OSError, AttributeError):
            pass
    return _libc


def release_freed() -> None:
    """Return freed heap pages (glibc ``malloc_trim``) and pyarrow's unused pool memory to
    the system. Costs a few milliseconds (~2 ms a call in a task of 1M rows); call it between
    phases and batches, not in inner loops."""
    fn = _trim_fn()
    if fn:
        fn(0)
    try:
        import sys

        pa = sys.modules.get("pyarrow")  # never imports pyarrow just for this
        if pa is not None:
            pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - best effort only
        pass


def rss_bytes() -> int:
    """Current resident set size of this process (0 where /proc is unavailable)."""
    import os

    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
