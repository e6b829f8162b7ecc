"""A workload's ranking figures per configuration, kept as columns with the offers: what is
put is read back, a carried table keeps what was made, and the snapshot keeps tables up to
its byte bound (``CACHE_LIMITS["configs"]``), least recently used out first."""

from __future__ import annotations

import numpy as np
import pytest

from app.model.types import OomRisk
from app.services.config_table import ConfigTable
from app.services.snapshot import CACHE_LIMITS, OfferSnapshot


def test_a_table_gives_back_what_was_put_and_carries_it_to_more_configurations() -> None:
    table = ConfigTable(4)
    assert table.nbytes == 4 * 26  # 3 float64 + 2 int8 per configuration
    table.put([1, 2], [((120.5, 100.25, 140.0), OomRisk.HIGH), None])  # 2: GPU not in catalog
    table.put([3], [((7.0, 6.0, 8.0), OomRisk.LOW)])
    used = np.array([0, 1, 2, 3])
    assert table.missing(used) == [0]
    assert table.known(used).tolist() == [False, True, False, True]
    assert table.oom_high(used).tolist() == [False, True, False, False]
    assert table.rates[1].tolist() == [120.5, 100.25, 140.0]
    assert table.risk_of(3) == OomRisk.LOW
    wider = table.extended(6)
    assert wider.missing(np.arange(6)) == [0, 4, 5]
    assert wider.rates[1].tolist() == [120.5, 100.25, 140.0]
    assert wider.known(np.arange(6)).tolist() == [False, True, False, True, False, False]
    with pytest.raises(ValueError, match="extends"):
        table.extended(3)


def _snapshot() -> OfferSnapshot:
    empty = np.zeros(0)
    return OfferSnapshot(
        version=1,
        columns={"id": np.zeros(0, dtype=np.int64)},
        shadowed=empty,
        vram_gib=empty,
        config=empty,
        configs=(),
        group=empty,
        seen_s=empty,
        fresh_days=empty,
        aging_days=empty,
        bookable=empty,
        ambiguous={},
        region_labels=(),
        last_ok={},
        ran=frozenset(),
    )


def test_the_snapshot_keeps_tables_up_to_its_byte_bound() -> None:
    limit = CACHE_LIMITS["configs"][0]
    size = 10_000  # configurations per table: 260,000 bytes each
    snap = _snapshot()
    fits = limit // (26 * size)
    for k in range(fits + 3):
        snap.cached("configs", k, lambda: ConfigTable(size))
    assert snap.cached_answers()["configs"] == fits * 26 * size <= limit
    made: list[int] = []
    snap.cached("configs", 0, lambda: made.append(0) or ConfigTable(size))  # type: ignore[func-returns-value]
    assert made == [0]  # the oldest went first
    snap.cached("configs", fits + 2, lambda: made.append(1) or ConfigTable(size))  # type: ignore[func-returns-value]
    assert made == [0]  # the newest stayed


def test_a_value_asked_by_two_threads_at_once_is_made_once() -> None:
    import threading

    snap = _snapshot()
    started, release = threading.Event(), threading.Event()
    made: list[str] = []

    def slow() -> str:
        made.append("made")
        started.set()
        release.wait(5)
        return "answer"

    got: list[str] = []
    first = threading.Thread(target=lambda: got.append(snap.cached("rank_json", "k", slow)))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=lambda: got.append(snap.cached("rank_json", "k", slow)))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waits for the first thread's value instead of making it
    release.set()
    first.join(5)
    second.join(5)
    assert got == ["answer", "answer"] and made == ["made"]


def test_a_failed_make_is_made_again_by_the_thread_that_waited() -> None:
    import threading

    snap = _snapshot()
    started, release = threading.Event(), threading.Event()

    def failing() -> str:
        started.set()
        release.wait(5)
        raise ValueError("bad input")

    errors: list[str] = []

    def ask() -> None:
        try:
            snap.cached("rank_json", "k", failing)
        except ValueError as exc:
            errors.append(str(exc))

    first = threading.Thread(target=ask)
    first.start()
    assert started.wait(5)
    got: list[str] = []
    second = threading.Thread(target=lambda: got.append(snap.cached("rank_json", "k", lambda: "x")))
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert errors == ["bad input"] and got == ["x"]
    assert snap.cached("rank_json", "k", lambda: "y") == "x"  # kept
