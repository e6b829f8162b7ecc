"""Issue 29: the providers added to the refresh, and the public-catalog fallback, on PostgreSQL.

``gpucost refresh`` (the CLI, in process) against the fake providers' HTTP server loads every
registered provider; then each fault (a failing, malformed, empty and shrunken answer) is
served by all the new providers at once, and every one of them keeps what it had stored. The
catalog fallback is labelled, never retires first-hand rows and never outranks a first-hand
price of the same instance; ``/v1/providers`` lists every provider's fetcher and coverage.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from sqlalchemy import select

from app.asgi import create_app
from app.cli import EXIT_OK, main
from app.db.models import InstanceOffer, Provider, utcnow
from app.db.session import create_engine_from_url, create_session_factory
from app.price_age import tier
from app.services import refresh as refresh_service
from app.settings import Settings, get_settings
from tests.conftest import seeded_database
from tests.fake_providers import (
    ALL_PROVIDERS,
    CATALOG_PROVIDERS,
    NEW_PROVIDERS,
    TEST_KEYS,
    FakeProviders,
    scraper_env,
)
from tests.refresh_helpers import fake_settings, latest_run, observations, offers, refresh

pytestmark = pytest.mark.db

ADDED = NEW_PROVIDERS + CATALOG_PROVIDERS
DAY = dt.timedelta(days=1)


class Clock:
    """Run times after the CLI's own (now), a day apart."""

    now = utcnow()

    @classmethod
    def next(cls) -> dt.datetime:
        cls.now += DAY
        return cls.now


@pytest.fixture(scope="module")
def db() -> Iterator[str]:
    """A seeded database after one ``gpucost refresh`` of every provider over HTTP."""
    with seeded_database() as url, FakeProviders().serve() as base:
        env = {
            **scraper_env(base),
            "GPUCOST_DATABASE_URL": url,
            "GPUCOST_SCRAPER_PROVIDERS": ",".join(ALL_PROVIDERS),
            "COLUMNS": "200",
        }
        get_settings.cache_clear()  # the CLI reads its settings once per process
        try:
            result = CliRunner().invoke(main, ["refresh"], env=env)
        finally:
            get_settings.cache_clear()
        assert result.exit_code == EXIT_OK, result.output
        yield url


def stored(url: str, slugs: tuple[str, ...]) -> dict[str, Any]:
    """Every stored offer of ``slugs`` (the columns a refresh touches), one query."""
    engine = create_engine_from_url(url)
    try:
        with create_session_factory(engine)() as s:
            rows = s.execute(
                select(Provider.slug, InstanceOffer)
                .join(Provider)
                .where(Provider.slug.in_(slugs))
                .order_by(InstanceOffer.id)
            )
            return {
                (slug, o.offer_key, o.region, o.billing): (
                    o.price_per_hour,
                    o.available,
                    o.last_seen_at,
                    o.price_kind,
                )
                for slug, o in rows
            }
    finally:
        engine.dispose()


def client(url: str) -> Any:
    return TestClient(create_app(Settings(database_url=url, offer_stale_after_days=3650)))


def test_refresh_loads_every_provider(db: str) -> None:
    loaded = set()
    with client(db) as c:
        for slug in ALL_PROVIDERS:
            items = c.get("/v1/offers", params={"provider": slug, "limit": 1000}).json()["items"]
            fetched = [o for o in items if o["price_kind"] in ("scraped", "catalog")]
            if fetched:
                loaded.add(slug)
            kind = "catalog" if slug in CATALOG_PROVIDERS else "scraped"
            assert fetched and all(o["price_kind"] == kind for o in fetched), slug
            assert all(o["bookable"] for o in fetched), slug
        runs = {r["provider"]: r for r in c.get("/v1/refresh-runs").json()}
        cudo = c.get("/v1/offers", params={"provider": "cudo", "limit": 1000}).json()["items"]
        nebius_listed = c.get("/v1/offers", params={"provider": "nebius", "limit": 1}).json()
    assert len(loaded) >= 12 and loaded == set(ALL_PROVIDERS)
    assert all(runs[slug]["status"] == "ok" for slug in ALL_PROVIDERS)
    assert {slug: runs[slug]["source_kind"] for slug in CATALOG_PROVIDERS} == dict.fromkeys(
        CATALOG_PROVIDERS, "catalog"
    )
    # a gpuhunt row is dated by the catalog's version (nebius: 20261201-4211, 00:00 UTC) and
    # aged by the catalog thresholds; SkyPilot's file states no date: its rows stay undated
    (row,) = nebius_listed["items"]
    assert row["price_seen_at"] == "2026-12-01T00:00:00+00:00"
    assert row["price_age"] == tier("catalog", row["age_days"])
    assert cudo and all(o["price_seen_at"] is None for o in cudo)
    assert all(o["price_age"] == "undated" for o in cudo)
    gcp = offers(db, "gcp")[("a2-highgpu-1g", "us-central1", "on_demand")]
    assert gcp["price"] == Decimal("3.673385") and gcp["source"].startswith("live: ")
    nebius = offers(db, "nebius")[
        ("gpuhunt:gpu-h200-sxm_8gpu-128vcpu-1600gb", "eu-west1", "on_demand")
    ]
    assert nebius["source"].startswith("catalog: ") and nebius["price"] == Decimal("27.5")


@pytest.mark.parametrize(
    ("fault", "status", "expected"),
    [
        ("500", "error", "HTTP 500"),
        ("missing_field", "error", "unexpected payload shape"),
        ("empty", "error", "empty result"),
        ("shrink", "suspect", "answer shrank"),
    ],
)
def test_a_bad_answer_loses_nothing_stored(db: str, fault: str, status: str, expected: str) -> None:
    kept = stored(db, ADDED)
    report = refresh(
        db, FakeProviders(faults=dict.fromkeys(ADDED, fault)), at=Clock.next(), providers=ADDED
    )
    outcomes = {o.slug: o for o in report.outcomes}
    for slug in ADDED:
        assert outcomes[slug].status == status, (slug, outcomes[slug].error)
        assert expected in (outcomes[slug].error or ""), (slug, outcomes[slug].error)
        assert latest_run(db, slug).status == status
    assert stored(db, ADDED) == kept  # nothing retired, no price or last_seen_at changed


def test_next_night_appends_history(db: str) -> None:
    at = Clock.next()
    assert refresh(db, FakeProviders(version=2), at=at, providers=["gcp", "oci"]).ok
    a2 = offers(db, "gcp")[("a2-highgpu-1g", "us-central1", "on_demand")]
    # the A100 SKU moved from 2.933908 to 2.80 (gcp/skus_page1.v2.json)
    assert a2["price"] == Decimal("3.539477") and observations(db, a2["id"])[-1] == (at, 3.539477)
    h100 = offers(db, "oci")[("BM.GPU.H100.8", "all-regions", "on_demand")]
    assert [p for _, p in observations(db, h100["id"])] == [76.0, 72.0]


def test_keys_never_leak(db: str) -> None:
    keyed = [*TEST_KEYS]
    report = refresh(
        db, FakeProviders(faults=dict.fromkeys(keyed, "echo401")), at=Clock.next(), providers=keyed
    )
    for o in report.outcomes:
        assert o.status == "error" and "HTTP 401" in (o.error or ""), o.slug
        stored = latest_run(db, o.slug).error or ""
        for key in TEST_KEYS.values():
            assert key not in (o.error or "") and key not in stored, o.slug


def test_a_missing_key_is_skipped_or_falls_back_to_the_catalog() -> None:
    settings = fake_settings(shadeform_api_key="", gcp_api_key="", providers=list(ALL_PROVIDERS))
    enabled, skipped = refresh_service.plan_providers(settings)
    assert [(s.slug, reason) for s, reason in skipped] == [
        ("shadeform", "no API key: set GPUCOST_SCRAPER_SHADEFORM_API_KEY")
    ]
    assert {s.slug: s.source_kind for s in enabled}["gcp"] == "catalog"
    no_client = fake_settings(verda_client_id="", catalog_fallback=False, providers=["verda"])
    assert [(s.slug, r) for s, r in refresh_service.plan_providers(no_client)[1]] == [
        ("verda", "no API key: set GPUCOST_SCRAPER_VERDA_CLIENT_ID")
    ]


def test_catalog_offers_are_labelled_and_never_outrank_first_hand(db: str) -> None:
    first_hand = {k: v for k, v in offers(db, "gcp").items() if v["source"].startswith("live: ")}
    report = refresh(
        db, FakeProviders(), at=Clock.next(), providers=["gcp"], settings={"gcp_api_key": ""}
    )
    assert report.ok and report.outcomes[0].source_kind == "catalog"
    stored = offers(db, "gcp")
    # the catalog run adds its rows and leaves every first-hand row as it was
    assert {k: v for k, v in stored.items() if k in first_hand} == first_hand
    catalog = {k: v for k, v in stored.items() if v["source"].startswith("catalog: ")}
    assert set(catalog) == {
        ("gpuhunt:a2-highgpu-1g", "us-central1", "on_demand"),
        ("gpuhunt:a2-highgpu-1g", "us-central1", "spot"),
        ("gpuhunt:g2-standard-4", "us-central1", "on_demand"),
    }
    assert all(v["available"] for v in catalog.values())
    with client(db) as c:
        listed = c.get("/v1/offers", params={"provider": "gcp", "limit": 1000}).json()["items"]
        by_instance = {(o["instance_type"], o["region"], o["billing"]): o for o in listed}
        # the catalog's a2-highgpu-1g rows have first-hand twins: only those are listed
        twin = by_instance[("a2-highgpu-1g", "us-central1", "on_demand")]
        assert twin["price_kind"] == "scraped"
        assert twin["price_per_hour"] == pytest.approx(3.539477)
        assert by_instance[("a2-highgpu-1g", "us-central1", "spot")]["price_kind"] == "scraped"
        l4 = by_instance[("g2-standard-4", "us-central1", "on_demand")]  # no first-hand twin
        assert l4["price_kind"] == "catalog" and l4["source"].startswith("catalog: ")
        assert l4["bookable"] and l4["price_seen_at"] == "2026-11-30T00:00:00+00:00"
        # the provider's counts leave the hidden catalog twins out, as the listing does
        gcp = next(p for p in c.get("/v1/providers").json()["providers"] if p["slug"] == "gcp")
        kinds = [o["price_kind"] for o in listed]
        assert kinds.count("catalog") == 1  # g2-standard-4 alone: the a2 rows are hidden
        assert gcp["offers_by_source"] == {"api": kinds.count("scraped"), "catalog": 1}
        ranked = c.post(
            "/v1/rank",
            json={
                "workload": {"preset": "resnet50-imagenet"},
                "filters": {"provider": "gcp"},
                "limit": 500,
            },
        ).json()["results"]
        keys = {
            (r["offer"]["instance_type"], r["offer"]["billing"], r["offer"]["price_kind"])
            for r in ranked
        }
        assert ("a2-highgpu-1g", "on_demand", "scraped") in keys
        assert not any(k[0] == "a2-highgpu-1g" and k[2] == "catalog" for k in keys)
    # a first-hand run later retires the catalog snapshot
    assert refresh(db, FakeProviders(version=2), at=Clock.next(), providers=["gcp"]).ok
    assert not any(v["available"] for k, v in offers(db, "gcp").items() if k in catalog)
    assert latest_run(db, "gcp").source_kind == "api"


def test_providers_endpoint_lists_every_provider(db: str) -> None:
    with TestClient(create_app(Settings(database_url=db))) as c:
        body = c.get("/v1/providers").json()
        page = c.get("/").text
    listed = {p["slug"]: p for p in body["providers"]}
    assert set(ALL_PROVIDERS) <= set(listed) and "gpushare" in listed
    gcp = listed["gcp"]
    assert (gcp["fetcher"], gcp["needs_api_key"], gcp["catalog_fallback"]) == (
        "api",
        True,
        "gpuhunt gcp",
    )
    assert gcp["api_key_settings"] == ["GPUCOST_SCRAPER_GCP_API_KEY"]
    assert gcp["last_success_at"] and gcp["last_run_source"] == "api"
    assert gcp["offers_by_source"]["api"] == gcp["price_ages"]["offers"]
    assert listed["verda"]["api_key_settings"] == [
        "GPUCOST_SCRAPER_VERDA_API_KEY",
        "GPUCOST_SCRAPER_VERDA_CLIENT_ID",
    ]
    assert (listed["oci"]["fetcher"], listed["oci"]["needs_api_key"]) == ("api", False)
    nebius = listed["nebius"]
    assert (nebius["fetcher"], nebius["last_run_source"]) == ("public_catalog", "catalog")
    assert set(nebius["offers_by_source"]) == {"catalog"}
    seed = listed["gpushare"]
    assert (seed["fetcher"], seed["last_success_at"], seed["offers_by_source"]) == (
        "seed",
        None,
        {"seed": seed["price_ages"]["offers"]},
    )
    # every offer of the module's refresh (CLI, now) is dated today: a scraped price is fresh
    assert listed["oci"]["age_tier"] == "fresh"
    assert listed["oci"]["price_ages"]["fresh"] == listed["oci"]["price_ages"]["offers"] > 0
    for p in listed.values():
        ages = p["price_ages"]
        assert sum(ages[t] for t in ("fresh", "aging", "old", "undated")) == ages["offers"]
        assert sum(p["offers_by_source"].values()) == ages["offers"], p["slug"]
        dated = [t for t in ("fresh", "aging", "old") if ages[t]]
        assert p["age_tier"] == (dated[0] if dated else "undated"), p["slug"]
    assert sum(p["price_ages"]["offers"] for p in listed.values()) == body["price_ages"]["offers"]
    assert "/v1/providers" in page and "public catalog" in page
