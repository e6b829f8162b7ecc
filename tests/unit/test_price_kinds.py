"""Price kinds and their sources (app/price_age.py) and how ingest dates a fetched price."""

from __future__ import annotations

import datetime as dt

import pytest

from app.db.ingest import price_seen_at
from app.price_age import (
    PRICE_KIND_OF_SOURCE,
    PRICE_KINDS,
    best_tier,
    bookable,
    source_kind,
    tier,
)
from scrapers.records import ScrapedOffer

NOW = dt.datetime(2026, 12, 3, 10, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("kind", "age", "expected"),
    [
        ("catalog", 2.9, "fresh"),  # a catalog's day-granular date gets one day over a scrape
        ("scraped", 2.9, "aging"),
        ("catalog", 6.9, "aging"),
        ("catalog", 7.1, "old"),  # no more slack than a scrape before old
        ("catalog", None, "undated"),
    ],
)
def test_catalog_prices_age_by_their_own_thresholds(
    kind: str, age: float | None, expected: str
) -> None:
    assert tier(kind, age) == expected


def test_the_source_kind_follows_from_the_price_kind() -> None:
    assert {k: source_kind(k) for k in PRICE_KINDS} == {
        "scraped": "api",
        "catalog": "catalog",
        "hand_kept": "seed",
        "price_index": "seed",
        "quoted_example": "seed",
    }
    assert all(source_kind(p) == s for s, p in PRICE_KIND_OF_SOURCE.items())
    assert bookable("catalog") and bookable("scraped") and not bookable("price_index")


def test_a_providers_tier_is_its_freshest_dated_price() -> None:
    assert best_tier({"fresh": 0, "aging": 2, "old": 1, "undated": 5}) == "aging"
    assert best_tier({"fresh": 0, "aging": 0, "old": 0, "undated": 3}) == "undated"
    assert best_tier({}) == "undated"


def _offer(source_kind: str, seen_on: dt.date | None) -> ScrapedOffer:
    return ScrapedOffer(
        provider="nebius",
        offer_key="gpuhunt:gpu-h100-sxm",
        instance_type="gpu-h100-sxm",
        region="eu-north1",
        billing="on_demand",
        gpu_name_raw="H100",
        gpu_count=1,
        source="https://example.invalid/catalog.zip",
        source_kind=source_kind,  # type: ignore[arg-type]
        seen_on=seen_on,
    )


def test_a_fetched_price_is_dated_by_its_source_never_by_the_read() -> None:
    dated = _offer("catalog", dt.date(2026, 12, 1))
    assert price_seen_at(dated, NOW) == dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    assert price_seen_at(_offer("catalog", None), NOW) is None  # SkyPilot: the file has no date
    assert price_seen_at(_offer("api", None), NOW) == NOW  # the provider's API: the fetch
