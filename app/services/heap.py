"""The worker's heap: long-lived data kept out of the cyclic garbage collector's passes, and
freed memory handed back to the operating system.

A worker holds thousands of long-lived objects (a catalog version's reference data, the
memoised estimates of each workload asked). CPython's full collections rescan them all,
holding the GIL for 100-240 ms each (10,000 offers, a new workload per request) and stalling
every thread, ``/healthz`` included; :func:`freeze_long_lived` moves them out of reach
(``gc.freeze``). A freeze also keeps whatever cyclic garbage is alive at that moment, so a
caller that can afford it collects first.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc


def freeze_long_lived(*, collect_first: bool) -> None:
    """Freeze every object alive now out of the collector's passes; with ``collect_first``
    unfreeze and collect everything first (so cycles frozen earlier can go)."""
    if collect_first:
        gc.unfreeze()
        gc.collect()
    gc.freeze()


#: glibc ``mallopt`` parameters (malloc.h): ``M_MMAP_THRESHOLD``, ``M_ARENA_MAX``
M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8
#: the heap settings of a serving process: (parameter, value)
SERVING_MALLOC = ((M_ARENA_MAX, 2), (M_MMAP_THRESHOLD, 256 * 1024))


def tune_malloc() -> bool:
    """Make glibc hand freed memory back instead of keeping it per thread (call at startup,
    before the handler threads exist; nothing where there is no glibc). Returns whether
    every setting was taken.

    * ``M_ARENA_MAX`` 2: by default each thread that allocates gets an arena of its own (up to
      8 per CPU), and memory freed in one is not reused by another, so a worker's resident
      set rose with every request that built a new workload's estimates on another handler
      thread (100,000 offers, 100 new workloads: 217 -> 259 MiB, of which ``malloc_trim``
      gave back 49 MiB; with 2 arenas 216 -> 216 MiB).
    * ``M_MMAP_THRESHOLD`` 256 KiB, fixed: an allocation that large (a column of 100,000
      offers is 800 kB; a request makes dozens of them) is mapped and unmapped on its own,
      instead of the default threshold rising to the largest block freed (up to 32 MiB) and
      such arrays staying in the heap after they are freed (a fresh worker at 100,000 offers:
      217 -> 186 MiB resident).
    """
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    taken = [mallopt(param, value) == 1 for param, value in SERVING_MALLOC]  # every one
    return all(taken)


def return_free_memory() -> None:
    """Hand the heap freed by a load (the rows read, the previous version) back to the OS:
    glibc keeps it otherwise (``malloc_trim``; 100,000 offers: resident 250 -> 165 MiB).
    Nothing where there is no glibc."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
