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


def return_free_memory() -> None:
    """Hand the heap freed by a load (the rows read, the previous version) back to the OS:
    glibc keeps it otherwise (``malloc_trim``; 100,000 offers: resident 250 -> 165 MiB).
    Nothing where there is no glibc."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
