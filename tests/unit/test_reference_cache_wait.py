"""``ReferenceCache.aget`` after ``invalidate``: a write of this process is in the next answer.

Without a database: the version read and the load are replaced by a counter and a load that
takes 0.3 s, six times the cache's ``wait_s`` of 0.05 s (as a reload of the seeded reference
data took 1-2.5 s on a loaded test machine, past the default ``wait_s`` of 2 s: a revoked
submitter's runs then still moved the next answers, tests/test_submissions.py).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.services.reference_cache import ReferenceCache

LOAD_S = 0.3


def slow_cache(
    version: list[int], loading: threading.Event, loaded: threading.Event
) -> ReferenceCache:
    """A cache whose version is ``version[0]`` and whose load sets ``loading``, takes
    :data:`LOAD_S`, then sets ``loaded``."""
    cache = ReferenceCache(None, Path("."), poll_s=0.0, wait_s=0.05)  # type: ignore[arg-type]

    def load(v: tuple[int, int]) -> Any:
        loading.set()
        time.sleep(LOAD_S)
        loaded.set()
        # points: what the cache compares to tell new reference data (a new object each load)
        return SimpleNamespace(version=v[0], reference_version=v[1], offers=None, points=[v[0]])

    cache._read_version = lambda: (version[0], version[0])  # type: ignore[method-assign]
    cache._load = load  # type: ignore[method-assign]
    return cache


def test_a_slow_load_serves_the_version_held_unless_this_process_wrote() -> None:
    version, loading, loaded = [1], threading.Event(), threading.Event()
    cache = slow_cache(version, loading, loaded)

    async def held() -> int:
        return int((await cache.aget()).version)

    async def scenario() -> list[int]:
        served = [await held()]  # the first load: waited for
        version[0], _ = 2, loaded.clear()  # another process wrote: the version held
        served.append(await held())  # while the load runs
        await asyncio.to_thread(loaded.wait)
        version[0] = 3  # this process wrote: the next answer is of its write
        cache.invalidate()
        served.append(await held())
        version[0], _ = 4, loading.clear()
        served.append(await held())  # 3 held: a check of 4 in flight
        await asyncio.to_thread(loading.wait)
        version[0] = 5  # this process wrote while that load (of 4) ran: invalidate returns
        began = time.monotonic()  # at once, and the next answer waits past that load for a
        cache.invalidate()  # check begun after the write
        invalidate_s.append(time.monotonic() - began)
        served.append(await held())
        return served

    invalidate_s: list[float] = []
    assert asyncio.run(scenario()) == [1, 1, 3, 3, 5]
    assert invalidate_s[0] < LOAD_S / 3  # the event loop is not held for the load in flight
    assert cache.pending_write is False  # the check finished: later callers wait wait_s again
