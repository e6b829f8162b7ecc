"""The refresh job in-process on PostgreSQL, providers faked through httpx.MockTransport.

Covers normalisation on ingest, the price-history rule, unavailable-not-deleted, one
transaction per provider, the fault cases (the failing provider keeps its offers, the others
land, the run record says why), dry runs, the lock, and the new API endpoints.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text, update

from app.db.models import InstanceOffer, PriceObservation, Provider, RefreshRun
from app.db.session import create_engine_from_url, create_session_factory
from app.services import refresh as refresh_service
from app.services.refresh import ADVISORY_LOCK_KEY, RefreshLockedError, RefreshSetupError
from tests.conftest import seeded_database
from tests.fake_providers import FakeProviders
from tests.refresh_helpers import T0, fake_settings, latest_run, observations, offers, refresh

pytestmark = pytest.mark.db

PROVIDERS = ("vast", "runpod", "azure", "aws", "lambda", "vultr")
HOUR = dt.timedelta(hours=1)


@pytest.fixture(scope="module")
def db() -> Iterator[str]:
    """A migrated, seeded database, refreshed once at ``T0`` (tests run later refreshes)."""
    with seeded_database() as url:
        report = refresh(url, FakeProviders(), at=T0)
        assert report.ok, report
        yield url


class Clock:
    """Monotonic run times for the tests sharing the module database."""

    now = T0

    @classmethod
    def next(cls, step: dt.timedelta = HOUR) -> dt.datetime:
        cls.now += step
        return cls.now


def gpu_name(url: str, gpu_model_id: int | None) -> str | None:
    if gpu_model_id is None:
        return None
    engine = create_engine_from_url(url)
    with engine.connect() as conn:
        name = conn.execute(
            text("SELECT canonical_name FROM gpu_model WHERE id = :i"), {"i": gpu_model_id}
        ).scalar()
    engine.dispose()
    return name


def test_first_refresh_stores_every_provider_normalised(db: str) -> None:
    for slug in PROVIDERS:
        run = latest_run(db, slug)
        assert run.status == "ok" and run.offers_seen > 0 and run.finished_at is not None
        live = {k: v for k, v in offers(db, slug).items() if v["source"].startswith("live: ")}
        assert live, slug
    vast = offers(db, "vast")
    # names through the catalog normaliser; modded 48 GB 4090 keeps its family and its own VRAM
    # (47.99 GiB as reported: snapping only goes to sizes the matched card is sold with)
    modded = vast[("m41003-1x", "Hong Kong, HK", "on_demand")]
    assert (
        gpu_name(db, modded["gpu_model_id"]) == "GeForce RTX 4090"
        and abs(modded["vram"] - 48) < 0.05
    )
    assert vast[("m41001-1x", "Texas, US", "on_demand")]["vram"] == 24  # 24564 MiB snapped
    assert (
        gpu_name(db, vast[("m52003-1x", "Poland, PL", "on_demand")]["gpu_model_id"])
        == "GeForce RTX 4070 Ti SUPER"
    )
    # an unknown name is stored raw and reported; a 0 price is stored as NULL
    unknown = vast[("m52004-1x", "Brazil, BR", "on_demand")]
    assert unknown["gpu_model_id"] is None and unknown["raw"] == "GTX 1660 S"
    assert latest_run(db, "vast").unknown_gpu_names == ["GTX 1660 S"]
    assert vast[("m52005-1x", "Germany, DE", "on_demand")]["price"] is None
    assert offers(db, "aws")[("p6-b200.48xlarge", "us-east-1", "on_demand")]["price"] is None
    # A10 ≠ A10G; Quadro RTX 6000 ≠ RTX 6000 Ada
    aws_g5 = offers(db, "aws")[("g5.xlarge", "us-east-1", "on_demand")]
    lambda_a10 = offers(db, "lambda")[("gpu_1x_a10", "us-east-1", "on_demand")]
    assert gpu_name(db, aws_g5["gpu_model_id"]) == "A10G"
    assert gpu_name(db, lambda_a10["gpu_model_id"]) == "A10"
    rtx6000 = offers(db, "lambda")[("gpu_1x_rtx6000", "us-west-1", "on_demand")]
    ada = offers(db, "runpod")[("NVIDIA RTX 6000 Ada Generation|1x|secure", "any", "on_demand")]
    assert gpu_name(db, rtx6000["gpu_model_id"]) == "Quadro RTX 6000"
    assert gpu_name(db, ada["gpu_model_id"]) == "RTX 6000 Ada"
    # per-GPU prices × count; cents → dollars
    runpod = offers(db, "runpod")
    assert runpod[("NVIDIA H100 80GB HBM3|2x|secure", "any", "on_demand")]["price"] == Decimal("5")
    assert lambda_a10["price"] == Decimal("0.77")


def test_refreshed_and_seeded_offers_store_one_vram_per_card(db: str) -> None:
    # app.gpu_names.offer_vram at ingest and seed: a listing within 0.90-1.07 of the matched
    # card's catalog size is stored as that size (driver readings such as 24564 MiB → 24)
    from app.db.models import GpuModel

    engine = create_engine_from_url(db)
    try:
        with create_session_factory(engine)() as s:
            rows = s.execute(
                select(InstanceOffer.offer_key, InstanceOffer.vram_gib_per_gpu, GpuModel.vram_gib)
                .join(GpuModel, GpuModel.id == InstanceOffer.gpu_model_id)
                .where(InstanceOffer.vram_gib_per_gpu.is_not(None), InstanceOffer.gpu_count >= 1)
            ).all()
    finally:
        engine.dispose()
    assert len(rows) > 50
    in_band = [(k, v, c) for k, v, c in rows if 0.90 * c <= v <= 1.07 * c]
    assert in_band and all(v == c for _, v, c in in_band), [r for r in in_band if r[1] != r[2]]


def test_seed_offers_of_refreshed_providers_become_unavailable_others_untouched(db: str) -> None:
    seed_vast = [v for v in offers(db, "vast").values() if not v["source"].startswith("live:")]
    assert seed_vast and not any(v["available"] for v in seed_vast)
    assert all(v["available"] for v in offers(db, "gcp").values())  # not refreshed: untouched
    # an AWS seed row with the same natural key was updated in place (history continues)
    p4d = offers(db, "aws")[("p4d.24xlarge", "us-east-1", "on_demand")]
    assert p4d["source"].startswith("live: ") and p4d["price"] == Decimal("30.1234")
    # the network between machines the price list states ("400 Gigabit"), stored in Gbit/s;
    # "Up to 10 Gigabit" (g5.xlarge) is no stated rate
    assert p4d["network_gbps"] == 400.0
    assert offers(db, "aws")[("g5.xlarge", "us-east-1", "on_demand")]["network_gbps"] is None
    prices = [p for _, p in observations(db, p4d["id"])]
    assert prices[-1] == 30.1234 and len(prices) >= 2


def test_reseeding_does_not_undo_a_refresh(db: str) -> None:
    from app.db.seed import seed_all
    from tests.conftest import SEED_DIR

    before = {slug: offers(db, slug) for slug in ("aws", "vast")}
    engine = create_engine_from_url(db)
    with create_session_factory(engine)() as s, s.begin():
        seed_all(s, SEED_DIR)
    engine.dispose()
    assert {slug: offers(db, slug) for slug in ("aws", "vast")} == before


def test_price_history_rule_and_gone_offers(db: str) -> None:
    key = ("m52001-8x", "Finland, FI", "on_demand")
    h100 = offers(db, "vast")[key]
    before = observations(db, h100["id"])
    same = Clock.next()
    assert refresh(db, FakeProviders(), at=same, providers=["vast"]).ok
    assert observations(db, h100["id"]) == before  # unchanged price, less than a day later
    assert latest_run(db, "vast").offers_changed == 0
    changed = Clock.next()
    assert refresh(db, FakeProviders(version=2), at=changed, providers=["vast"]).ok
    after = observations(db, h100["id"])
    assert after[:-1] == before and after[-1] == (changed, 14.8)
    run = latest_run(db, "vast")
    assert (run.offers_new, run.offers_changed, run.offers_gone) == (2, 2, 1)  # + its bid
    now = offers(db, "vast")
    assert now[("m41003-1x", "Hong Kong, HK", "on_demand")]["available"] is False  # gone
    assert now[("m41009-1x", "Sweden, SE", "on_demand")]["available"] is True  # new
    # a day later with the same prices: one daily observation per priced offer
    day = Clock.next(dt.timedelta(hours=25))
    assert refresh(db, FakeProviders(version=2), at=day, providers=["vast"]).ok
    assert observations(db, h100["id"])[-1] == (day, 14.8)
    nulls = now[("m52005-1x", "Germany, DE", "on_demand")]
    assert observations(db, nulls["id"]) == []  # unknown prices are not observed


@pytest.mark.parametrize(
    ("provider", "fault", "expected"),
    [
        ("vast", "timeout", "timed out after 2 attempts"),
        ("runpod", "500", "HTTP 500 after 2 attempts"),
        ("azure", "garbage", "malformed JSON"),
        ("lambda", "missing_field", "unexpected payload shape"),
        ("aws", "missing_field", "unexpected payload shape"),
        ("vultr", "empty", "empty result"),
        ("runpod", "empty", "empty result"),
    ],
)
def test_failing_provider_keeps_its_offers_while_others_land(
    db: str, provider: str, fault: str, expected: str
) -> None:
    assert refresh(db, FakeProviders(), at=Clock.next()).ok  # a clean state
    kept = offers(db, provider)
    at = Clock.next()
    report = refresh(db, FakeProviders(version=2, faults={provider: fault}), at=at)
    assert not report.ok
    failed = {o.slug: o for o in report.outcomes if o.status == "error"}
    assert list(failed) == [provider] and expected in (failed[provider].error or "")
    assert offers(db, provider) == kept
    run = latest_run(db, provider)
    assert run.status == "error" and expected in (run.error or "")
    for slug in set(PROVIDERS) - {provider}:
        live = [v for v in offers(db, slug).values() if v["available"]]
        assert live and all(v["last_seen_at"] == at for v in live), slug
        assert latest_run(db, slug).status == "ok"


def test_429_then_success_lands(db: str) -> None:
    fake = FakeProviders(faults={"lambda": "429once"})
    at = Clock.next()
    report = refresh(db, fake, at=at, providers=["lambda"])
    assert report.ok
    assert [r for r in fake.requests if r[0] == "lambda"] == [
        ("lambda", "GET", "/lambda/api/v1/instance-types")
    ] * 2
    assert latest_run(db, "lambda").status == "ok"


def test_failure_while_applying_rolls_the_provider_back(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = offers(db, "vultr")
    real = refresh_service.apply_offers

    def apply_then_fail(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # everything written and flushed …
        raise RuntimeError("disk full")  # … then the transaction fails before commit

    monkeypatch.setattr(refresh_service, "apply_offers", apply_then_fail)
    report = refresh(db, FakeProviders(version=2), at=Clock.next(), providers=["vultr"])
    assert not report.ok and offers(db, "vultr") == kept
    run = latest_run(db, "vultr")
    assert run.status == "error" and run.error == "RuntimeError: disk full"


def test_dry_run_writes_nothing(db: str) -> None:
    engine = create_engine_from_url(db)

    def counts() -> tuple[int, ...]:
        with engine.connect() as conn:
            return tuple(
                conn.execute(select(func.count()).select_from(t)).scalar_one()
                for t in (InstanceOffer, PriceObservation, RefreshRun, Provider)
            )

    before = counts()
    report = refresh(db, FakeProviders(version=2), at=Clock.next(), dry_run=True)
    assert report.dry_run and report.ok and counts() == before
    assert all(o.counts and o.counts.seen > 0 for o in report.outcomes)
    engine.dispose()


def test_second_run_is_refused_while_the_lock_is_held(db: str) -> None:
    holder = create_engine(db)
    with holder.connect() as conn:
        assert conn.execute(select(func.pg_try_advisory_lock(ADVISORY_LOCK_KEY))).scalar()
        with pytest.raises(RefreshLockedError, match="advisory lock"):
            refresh(db, FakeProviders(), at=Clock.next())
        conn.execute(select(func.pg_advisory_unlock(ADVISORY_LOCK_KEY)))
    holder.dispose()


def test_unfinished_rows_of_a_dead_run_are_marked_interrupted(db: str) -> None:
    engine = create_engine_from_url(db)
    factory = create_session_factory(engine)
    with factory() as s, s.begin():
        pid = s.scalar(select(Provider.id).where(Provider.slug == "aws"))
        s.add(
            RefreshRun(
                provider_id=pid,
                started_at=Clock.now,
                status="running",
                offers_seen=0,
                offers_new=0,
                offers_changed=0,
                offers_gone=0,
            )
        )
    assert refresh(db, FakeProviders(), at=Clock.next(), providers=["vultr"]).ok
    with factory() as s:
        statuses = s.scalars(
            select(RefreshRun.status).where(RefreshRun.provider_id == pid).order_by(RefreshRun.id)
        ).all()
    assert statuses[-1] == "interrupted"
    engine.dispose()


def test_provider_selection() -> None:
    settings = fake_settings(lambda_api_key="", catalog_fallback=False)
    enabled, skipped = refresh_service.plan_providers(settings)
    assert [s.slug for s, _ in skipped] == ["lambda"] and "API_KEY" in skipped[0][1]
    assert "lambda" not in {s.slug for s in enabled}
    with pytest.raises(RefreshSetupError, match="LAMBDA_API_KEY"):
        refresh_service.plan_providers(settings, ["lambda"])
    # with the public-catalog fallback (the default) the keyless provider loads its catalog
    enabled, skipped = refresh_service.plan_providers(fake_settings(lambda_api_key=""))
    assert not skipped
    assert {s.slug: s.source_kind for s in enabled}["lambda"] == "catalog"
    with pytest.raises(RefreshSetupError, match="unknown provider"):
        refresh_service.plan_providers(settings, ["nope"])
    enabled, _ = refresh_service.plan_providers(settings, ["VAST", "vast"])
    assert [s.slug for s in enabled] == ["vast"]


def test_api_refresh_runs_history_and_stale_flags(db: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings

    assert refresh(db, FakeProviders(), at=Clock.next()).ok
    # the runs are dated 2026-11-20; the provider's refresh flag is its own field
    # (provider_refresh_stale; per-offer price ages: tests/test_offers_trust.py); the server
    # checks the catalog version on every request (the write below is served at once)
    settings = Settings(database_url=db, catalog_poll_s=0)
    with TestClient(create_app(settings)) as client:
        runs = {r["provider"]: r for r in client.get("/v1/refresh-runs").json()}
        assert set(PROVIDERS) <= set(runs)
        assert all(runs[p]["status"] == "ok" and not runs[p]["stale"] for p in PROVIDERS)
        assert runs["vast"]["unknown_gpu_names"] == ["GTX 1660 S"]
        assert (
            runs["azure"]["warnings"] and "Standard_NC8ads_A10_v4" in runs["azure"]["warnings"][0]
        )

        page = client.get("/v1/offers", params={"provider": "vast", "limit": 1000}).json()
        h100 = next(
            o
            for o in page["items"]
            if o["offer_key"] == "m52001-8x" and o["billing"] == "on_demand"
        )
        assert h100["gpu"] == "H100 SXM 80GB" and not h100["provider_refresh_stale"]
        history = client.get(f"/v1/offers/{h100['id']}/prices").json()
        assert [p["price_per_hour"] for p in history["observations"]][:2] == [15.2, 14.8]
        assert history["provider"] == "vast" and history["price_per_hour"] == 15.2
        assert client.get("/v1/offers/999999/prices").status_code == 404
        assert client.get("/v1/offers/0/prices").status_code == 400  # ids start at 1

        # vast's last success is now three days old: its offers are stale everywhere
        engine = create_engine_from_url(db)
        with engine.begin() as conn:
            vast_id = conn.execute(select(Provider.id).where(Provider.slug == "vast")).scalar()
            conn.execute(
                update(RefreshRun)
                .where(RefreshRun.provider_id == vast_id)
                .values(finished_at=func.now() - dt.timedelta(days=3))
            )
        engine.dispose()
        assert {r["provider"]: r for r in client.get("/v1/refresh-runs").json()}["vast"]["stale"]
        page = client.get("/v1/offers", params={"provider": "vast"}).json()
        assert page["items"] and all(
            o["stale"] and o["provider_refresh_stale"] for o in page["items"]
        )
        assert not any(
            o["provider_refresh_stale"]
            for o in client.get("/v1/offers", params={"provider": "aws"}).json()["items"]
        )
        ranked = client.post(
            "/v1/rank",
            json={"workload": {"preset": "resnet50-imagenet"}, "filters": {"provider": "vast"}},
        ).json()
        assert ranked["results"] and all(
            r["offer"]["provider_refresh_stale"] for r in ranked["results"]
        )
    assert refresh(db, FakeProviders(), at=Clock.next(), providers=["vast"]).ok  # fresh again
