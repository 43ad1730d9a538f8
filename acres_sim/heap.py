"""Giving freed heap memory back to the system (ROS-free).

glibc keeps what a thread frees in that thread's arena for its next allocations. A long-running
process whose threads allocate in bursts (a middleware's receive threads, render workers) then
grows its resident memory for tens of minutes while holding nothing more: a 60-minute soak showed
each vehicle_bridge's thread arena filling from 2.9 to 3.9 MB between minutes 10 and 20, and two of
the fake game's from 1.44 to 1.69 MB over 40 minutes. malloc_trim(0) returns every arena's free
pages; a process that calls it now and then (TRIM_EVERY_S) stays at what it uses. Every node
process (nodes/runner.run) and the fake game's command line do, from their idle loops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time

TRIM_EVERY_S = 60.0


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator keeps no such arenas
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def trim_heap() -> bool:
    """Return the free pages of every malloc arena to the system; True when some were (False also
    where the C library has no malloc_trim)."""
    return bool(_TRIM(0)) if _TRIM is not None else False


class PeriodicTrim:
    """Called from a process's idle loop (every fraction of a second): trim_heap() once every
    TRIM_EVERY_S of wall time."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def __call__(self) -> None:
        if time.monotonic() - self._last >= TRIM_EVERY_S:
            trim_heap()
            self._last = time.monotonic()
