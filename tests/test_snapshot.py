"""The catalog version and the per-worker offer snapshot (issue 28).

Every write to the catalog bumps ``catalog_version`` in its own transaction; the snapshot
filters exactly as the SQL does; answers carry an ``ETag`` of the version; a write is seen by
every worker within seconds, and no answer mixes two versions.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import func, select, update

from app.asgi import create_app
from app.db.models import CurrencyRate, InstanceOffer
from app.db.session import create_engine_from_url, create_session_factory
from app.services.offers import page_offers, select_offers
from app.services.reference_cache import ReferenceCache
from app.services.snapshot import matching_offers, offers_page, read_version
from app.settings import Settings
from tests.conftest import SEED_DIR, seeded_database

pytestmark = pytest.mark.db

RANK = {"workload": {"preset": "resnet50-imagenet"}, "limit": 20}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """A seeded database of this module's own (its tests write)."""
    with seeded_database() as url:
        yield url


@pytest.fixture(scope="module")
def factory(url: str) -> Iterator[Any]:
    engine = create_engine_from_url(url)
    yield create_session_factory(engine)
    engine.dispose()


@pytest.fixture(scope="module")
def cache(factory: Any) -> ReferenceCache:
    """One worker's cache for the read-only tests: the reference data and offers loaded once,
    the version checked on every ``get()`` (a write by a test before is read again)."""
    return ReferenceCache(factory, SEED_DIR, poll_s=0)


@pytest.mark.parametrize(
    ("filters", "currency"),
    [
        ({}, "USD"),
        ({"available_only": False, "include_suspect": True}, "USD"),
        ({"min_vram_gib": 40}, "USD"),
        ({"min_vram_gib": 80, "gpu_count": 8}, "USD"),
        ({"min_gpu_count": 2, "billing": "spot"}, "USD"),
        ({"max_price_per_hour": 2.0}, "USD"),
        ({"max_price_per_hour": 15.0, "bookable_only": True}, "CNY"),
        ({"gpu": "H100"}, "USD"),  # a family: offers stored without a GPU when ambiguous
        ({"gpu": "A100, RTX 4090", "max_price_per_hour": 3.0}, "USD"),
        ({"region": "China"}, "USD"),
        ({"region": "us-"}, "EUR"),
        ({"provider": "AWS"}, "USD"),
    ],
)
def test_snapshot_filters_as_the_sql_does(
    factory: Any, cache: ReferenceCache, filters: dict[str, Any], currency: str
) -> None:
    """Same offers, same order, same rows (every field), same totals as the SQL queries."""
    ref = cache.get()
    assert ref.offers is not None
    with factory() as session:
        sql = select_offers(session, filters, ref, currency=currency)
        assert matching_offers(session, filters, ref, currency=currency) == sql
        for offset in (0, 7):
            page, total = page_offers(
                session, filters, ref, currency=currency, limit=5, offset=offset
            )
            assert offers_page(
                session, filters, ref, currency=currency, limit=5, offset=offset
            ) == (page, total)


def test_price_trust_columns_are_price_age_per_offer(cache: ReferenceCache) -> None:
    """The ranking's price-trust columns, on arrays, are :func:`price_age` of each offer."""
    ref = cache.get()
    snap = ref.offers
    index = snap.matching({"available_only": False}, ref)
    for now in (dt.datetime(2026, 12, 3, tzinfo=dt.UTC), dt.datetime(2027, 6, 1, tzinfo=dt.UTC)):
        trust = snap.price_trust(index, now)
        ages = [r.price_age(now) for r in snap.rows(index)]
        assert trust["unbookable"].tolist() == [not a.bookable for a in ages]
        assert trust["demoted"].tolist() == [a.demoted for a in ages]
        assert trust["fresh"].tolist() == [a.tier == "fresh" for a in ages]
        assert {a.tier for a in ages} >= {"undated", "old"}


def test_every_catalog_write_bumps_the_version_in_its_transaction(factory: Any) -> None:
    def version() -> tuple[int, int]:
        with factory() as session:
            return read_version(session)

    offer_id = select(func.min(InstanceOffer.id)).scalar_subquery()
    v0 = version()
    with factory() as session, session.begin():
        session.execute(
            update(InstanceOffer).where(InstanceOffer.id == offer_id).values(region="test-1")
        )
        assert read_version(session)[0] > v0[0]  # inside the writer's transaction
    v1 = version()
    assert v1[0] > v0[0] and v1[1] == v0[1]  # an offer: the reference data stays
    with factory() as session:
        session.execute(update(InstanceOffer).values(available=False))
        session.rollback()
    assert version() == v1  # a rolled-back write moves nothing
    with factory() as session, session.begin():
        session.execute(update(CurrencyRate).values(source=CurrencyRate.source))
    v2 = version()
    assert v2[0] > v1[0] and v2[1] == v2[0]  # rates: the reference data is re-read


def test_get_answers_carry_an_etag_and_honour_if_none_match(url: str, factory: Any) -> None:
    with TestClient(create_app(Settings(database_url=url, catalog_poll_s=0))) as client:
        for path, params in (
            ("/v1/offers", {"limit": 3}),
            ("/v1/rank", {"preset": "resnet50-imagenet", "limit": 3}),
            ("/v1/gpus", {"q": "A100"}),
        ):
            first = client.get(path, params=params)
            tag = first.headers["etag"]
            assert first.status_code == 200 and tag.startswith('W/"c')
            again = client.get(path, params=params, headers={"If-None-Match": tag})
            if again.status_code == 200:  # a minute slot ended in between: once more
                tag = again.headers["etag"]
                again = client.get(path, params=params, headers={"If-None-Match": tag})
            assert again.status_code == 304 and again.content == b""
            assert again.headers["etag"] == tag
            other_params = {**params, "limit": 2} if "limit" in params else {"q": "H100"}
            other = client.get(path, params=other_params, headers={"If-None-Match": tag})
            assert other.status_code == 200 and other.headers["etag"] != tag
        with factory() as session, session.begin():
            session.execute(update(InstanceOffer).values(ram_gib=InstanceOffer.ram_gib))
        moved = client.get("/v1/gpus", headers={"If-None-Match": tag})
        assert moved.status_code == 200 and moved.headers["etag"] != tag
        assert client.get("/v1/refresh-runs").headers.get("etag") is None  # not the catalog's
        health = client.get("/healthz").json()["worker"]
        assert health["offers"] > 100 and 0 < health["snapshot_mib"] < 50


@pytest.mark.parametrize(
    "settings",
    [
        {"catalog_poll_s": 0.2, "catalog_listen": False},  # requests check every 0.2 s
        {"catalog_poll_s": 60.0, "catalog_fallback_poll_s": 60.0},  # NOTIFY alone
    ],
    ids=["polled", "notified"],
)
def test_a_write_is_seen_by_every_worker_and_no_answer_mixes_versions(
    url: str, factory: Any, settings: dict[str, Any]
) -> None:
    """Two workers answer ranks and offer pages from several threads while a writer sets
    every offer's price to 1, 2, 3 … in one statement each: every answer's offers show one
    price (one version), and both workers serve the last one within 5 s of its commit, seen
    by the requests' own checks or (requests checking once a minute) by ``LISTEN``."""
    apps = [create_app(Settings(database_url=url, **settings)) for _ in range(2)]
    clients = [TestClient(app) for app in apps]
    seen: list[set[float]] = []
    errors: list[str] = []
    stop = threading.Event()

    def reader(client: TestClient[Any], n: int) -> None:
        while not stop.is_set():
            if n % 2:
                r = client.post("/v1/rank", json=RANK)
                rows = [x["offer"] for x in r.json().get("results", [])]
            else:
                r = client.get("/v1/offers", params={"limit": 50, "offset": n})
                rows = r.json().get("items", [])
            if r.status_code != 200:
                errors.append(r.text)
            seen.append({o["price_per_hour"] for o in rows})

    def write(price: float) -> float:
        with factory() as session, session.begin():
            session.execute(update(InstanceOffer).values(price_per_hour=price))
        return time.monotonic()

    for c in clients:
        c.__enter__()
    try:
        write(1.0)
        for c in clients:  # loaded, and the preset's estimates made
            assert c.post("/v1/rank", json=RANK).status_code == 200
        threads = [threading.Thread(target=reader, args=(clients[i % 2], i)) for i in range(4)]
        for t in threads:
            t.start()
        for price in (2.0, 3.0, 4.0, 5.0):
            time.sleep(0.6)
            committed = write(price)
        stop.set()
        for t in threads:
            t.join()
        for c in clients:
            while (
                c.get("/v1/offers", params={"limit": 5}).json()["items"][0]["price_per_hour"] != 5.0
            ):
                assert time.monotonic() - committed < 5.0, "a worker still serves an old version"
                time.sleep(0.05)
    finally:
        for c in clients:
            c.__exit__(None, None, None)
    assert not errors and len(seen) > 10
    assert all(len(prices) <= 1 for prices in seen), [p for p in seen if len(p) > 1][:3]
    assert len({p for prices in seen for p in prices}) >= 3  # answers of several versions


def test_a_notified_version_is_loaded_before_any_request(url: str, factory: Any) -> None:
    """With ``LISTEN`` a worker loads a committed version within 5 s with no request asking
    (requests would check once a minute), and its next answer shows the write."""
    app = create_app(Settings(database_url=url, catalog_poll_s=60.0, catalog_fallback_poll_s=60.0))
    cache: ReferenceCache = app.state.reference
    with TestClient(app) as client:
        assert client.get("/v1/offers", params={"limit": 1}).status_code == 200
        deadline = time.monotonic() + 5.0
        while not cache.listening:
            assert time.monotonic() < deadline, "no LISTEN connection"
            time.sleep(0.02)
        held = cache.current.version  # type: ignore[union-attr]
        with factory() as session, session.begin():
            session.execute(update(InstanceOffer).values(price_per_hour=7.25))
        with factory() as session:
            version, _ = read_version(session)
        assert version > held
        committed = time.monotonic()
        while cache.current.version != version:  # type: ignore[union-attr]
            assert time.monotonic() - committed < 5.0, "the notified version was not loaded"
            time.sleep(0.02)
        items = client.get("/v1/offers", params={"limit": 5}).json()["items"]
        assert {o["price_per_hour"] for o in items} == {7.25}
        worker = client.get("/healthz").json()["worker"]
        assert worker["listening"] is True and worker["catalog_updates"] == "notified"


def test_without_notifications_the_worker_polls_in_the_background() -> None:
    """SQLite has no ``NOTIFY``: :meth:`ReferenceCache.watch` checks the version every
    ``fallback_s`` seconds instead (no connection string to listen on)."""
    import asyncio

    from app.services.reference_cache import listen_conninfo

    assert listen_conninfo("sqlite:///gpucost.db") is None
    assert listen_conninfo(None) is None
    assert listen_conninfo("postgresql+psycopg://u:p@h:5433/db") == "postgresql://u:p@h:5433/db"

    class Counting(ReferenceCache):
        pokes = 0

        def poke(self) -> None:
            Counting.pokes += 1

    async def run() -> str:
        cache = Counting(None, SEED_DIR)  # type: ignore[arg-type]
        assert cache.updates == "off"
        task = asyncio.create_task(cache.watch("sqlite:///gpucost.db", fallback_s=0.05))
        await asyncio.sleep(0.4)
        task.cancel()
        return cache.updates

    assert asyncio.run(run()) == "polled"  # what /healthz says (worker.catalog_updates)
    assert 3 <= Counting.pokes <= 9
