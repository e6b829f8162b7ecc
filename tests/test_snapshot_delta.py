"""A new catalog version built from the one held plus the rows written since (issue 28):
exactly what reading every offer gives, and a full read when a merge cannot be trusted."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import delete, func, insert, select, update

from app.db.models import InstanceOffer, Provider
from app.db.session import create_engine_from_url, create_session_factory
from app.services.estimates import rank_offers
from app.services.reference_cache import ReferenceCache
from app.services.snapshot import OfferSnapshot, read_version
from app.services.snapshot_build import build_snapshot, update_snapshot
from app.services.workloads import resolve_workload
from tests.conftest import SEED_DIR, seeded_database

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def factory() -> Iterator[Any]:
    """A seeded database of this module's own (its tests write)."""
    with seeded_database() as url:
        engine = create_engine_from_url(url)
        yield create_session_factory(engine)
        engine.dispose()


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    return a.tolist() == b.tolist()


def assert_same_snapshot(merged: OfferSnapshot, full: OfferSnapshot) -> None:
    """Every column and derived array equal; configurations and groups as the same keys (their
    numbering follows the order they were met in)."""
    assert merged.columns.keys() == full.columns.keys()
    for name, col in full.columns.items():
        assert _same(merged.columns[name], col), name
    for name in ("shadowed", "vram_gib", "seen_s", "fresh_days", "aging_days", "bookable"):
        assert _same(getattr(merged, name), getattr(full, name)), name
    assert [merged.configs[c] for c in merged.config] == [full.configs[c] for c in full.config]
    pairs = set(zip(merged.group.tolist(), full.group.tolist(), strict=True))
    assert len(pairs) == len(set(full.group.tolist()))  # one group for one group
    assert merged.ambiguous == full.ambiguous and merged.region_labels == full.region_labels
    assert (merged.last_ok, merged.ran) == (full.last_ok, full.ran)


def _write(factory: Any, *statements: Any) -> int:
    with factory() as session, session.begin():
        for stmt in statements:
            session.execute(stmt)
    with factory() as session:
        return read_version(session)[0]


def _rebuild(factory: Any, held: OfferSnapshot, version: int) -> tuple[OfferSnapshot, ...]:
    ref = ReferenceCache(factory, SEED_DIR).get().without_offers()
    with factory() as session:
        return (
            update_snapshot(session, ref, held, version),
            build_snapshot(session, ref, version),
        )


def test_a_price_change_and_a_new_offer_merge_into_what_a_full_read_gives(factory: Any) -> None:
    cache = ReferenceCache(factory, SEED_DIR)
    held = cache.get().offers
    first, last = held.columns["id"][0], held.columns["id"][-1]
    # what a refresh writes: new prices, an offer gone unavailable, an offer seen again
    version = _write(
        factory,
        update(InstanceOffer)
        .where(InstanceOffer.id.in_([int(first), int(last)]))
        .values(price_per_hour=InstanceOffer.price_per_hour + 1, available=False),
        update(InstanceOffer)
        .where(InstanceOffer.id == int(held.columns["id"][5]))
        .values(last_seen_at=dt.datetime(2026, 12, 3, tzinfo=dt.UTC), region="华北"),
    )
    merged, full = _rebuild(factory, held, version)
    assert merged.built == "delta" and merged.increments == 1 and full.built == "full"
    assert_same_snapshot(merged, full)
    # a new offer (an id after every held one) and one with a GPU never listed before
    with factory() as session:
        template = (
            session.execute(select(InstanceOffer.__table__).where(InstanceOffer.id == int(first)))
            .one()
            ._asdict()
        )
    row = {k: v for k, v in template.items() if k not in ("id", "row_version")}
    version = _write(
        factory,
        insert(InstanceOffer).values(
            {**row, "offer_key": "delta-1", "gpu_count": 3.0, "interconnect": "nvlink"}
        ),
    )
    again, full = _rebuild(factory, merged, version)
    assert again.built == "delta" and len(again) == len(held) + 1
    assert_same_snapshot(again, full)


def test_rank_after_a_merge_is_the_rank_of_a_full_read(factory: Any) -> None:
    cache = ReferenceCache(factory, SEED_DIR, poll_s=0)  # every get() checks the version
    held_ref = cache.get()
    w, reference, _ = resolve_workload({"preset": "resnet50-imagenet"}, held_ref)

    def ranking(ref: Any) -> list[tuple[int, float | None, int]]:
        with factory() as session:
            r = rank_offers(
                w, reference, session, {}, ref, currency="EUR", sort="cost_per_epoch",
                limit=30, drop_oom=False,
            )  # fmt: skip
        return [(x.offer.id, x.estimate.cost_per_epoch, x.rank) for x in r.results]

    ranking(held_ref)  # estimates kept for the held version
    cheapest = ranking(held_ref)[0][0]
    version = _write(
        factory,
        update(InstanceOffer)
        .where(InstanceOffer.id == cheapest)
        .values(price_per_hour=InstanceOffer.price_per_hour * 100),
    )
    merged_ref = cache.get()  # the cache merges: same reference data
    assert merged_ref.version == version and merged_ref.offers.built == "delta"
    # the workload's figures carried over: one table (26 bytes per configuration) of them
    configs = len(merged_ref.offers.configs)
    assert merged_ref.offers.cached_answers().get("configs") == 26 * configs
    fresh = ReferenceCache(factory, SEED_DIR).get()  # a worker that reads everything
    assert fresh.offers.built == "full"
    assert ranking(merged_ref) == ranking(fresh)
    assert ranking(merged_ref)[0][0] != cheapest


def test_a_deletion_a_provider_change_or_a_full_refresh_reads_every_offer(factory: Any) -> None:
    held = ReferenceCache(factory, SEED_DIR).get().offers
    victim = int(held.columns["id"][3])
    version = _write(factory, delete(InstanceOffer).where(InstanceOffer.id == victim))
    merged, full = _rebuild(factory, held, version)
    assert merged.built == "full" and victim not in merged.columns["id"].tolist()
    assert_same_snapshot(merged, full)
    version = _write(
        factory,
        update(Provider)
        .where(Provider.id == int(held.columns["provider_id"][0]))
        .values(name=Provider.name + " (renamed)"),
    )
    merged, full = _rebuild(factory, full, version)
    assert merged.built == "full"
    assert_same_snapshot(merged, full)
    # every offer rewritten (a full refresh): read in full, merging would cost more
    version = _write(factory, update(InstanceOffer).values(notes=InstanceOffer.notes))
    merged, full = _rebuild(factory, full, version)
    assert merged.built == "full"
    assert_same_snapshot(merged, full)


def test_every_written_row_is_stamped_above_the_version_before(factory: Any) -> None:
    with factory() as session:
        before = read_version(session)[0]
        stale = session.scalar(select(func.count()).where(InstanceOffer.row_version > before))
    assert stale == 0
    after = _write(factory, update(InstanceOffer).where(InstanceOffer.id < 4).values(notes="x"))
    with factory() as session:
        stamps = session.scalars(select(InstanceOffer.row_version).where(InstanceOffer.id < 4))
        assert all(before < s <= after for s in stamps)
