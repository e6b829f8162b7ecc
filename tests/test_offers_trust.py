"""Offers you can trust: implausible rows are stored suspect, kept out of rankings, counted;
every offer has a truthful age.

A seeded database is refreshed from the recorded fixtures plus the ``*.implausible.*`` rows
(``tests/fixtures/scrapers/README.md``): Lambda's 8×H100 at $0.01/h, a Vast RTX 4090 with 80 GiB
of VRAM and a Vast H100 whose spot bid is above its on-demand price.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from app.db.models import InstanceOffer, Provider
from app.db.session import create_engine_from_url, create_session_factory
from tests.conftest import seeded_database
from tests.fake_providers import FakeProviders
from tests.refresh_helpers import T0, latest_run, refresh

pytestmark = pytest.mark.db

#: (provider, offer key, billing) of the fixture rows that must be stored suspect.
IMPLAUSIBLE = {
    ("lambda", "gpu_8x_h100_sxm5", "on_demand"),
    ("vast", "m41009-1x", "on_demand"),
    ("vast", "m41010-1x", "spot"),
}


@pytest.fixture(scope="module")
def db() -> Iterator[str]:
    with seeded_database() as url:
        report = refresh(url, FakeProviders(variant="implausible"), at=T0)
        assert report.ok, report
        yield url


def stored(url: str) -> list[dict[str, Any]]:
    engine = create_engine_from_url(url)
    try:
        with create_session_factory(engine)() as s:
            return [
                {
                    "key": (slug, o.offer_key, o.billing),
                    "suspect": o.suspect,
                    "reason": o.suspect_reason,
                    "source": o.source,
                    "price": o.price_per_hour,
                }
                for o, slug in s.execute(select(InstanceOffer, Provider.slug).join(Provider))
            ]
    finally:
        engine.dispose()


def test_implausible_rows_are_stored_suspect_with_a_reason_and_the_rest_lands(db: str) -> None:
    rows = stored(db)
    live = [r for r in rows if r["source"].startswith("live: ")]
    keys = {r["key"][:2] for r in live}
    assert {(p, k) for p, k, _ in IMPLAUSIBLE} <= keys
    suspect = {r["key"]: r["reason"] for r in rows if r["suspect"]}
    # exactly the three implausible rows, no sourced seed offer and no other fixture row
    assert set(suspect) == IMPLAUSIBLE, suspect
    assert (
        "$0.00125 per GPU-hour is far below the plausible band"
        in suspect[("lambda", "gpu_8x_h100_sxm5", "on_demand")]
    )
    assert (
        "VRAM 80 GiB per GPU is impossible for the GeForce RTX 4090 (24 GiB"
        in suspect[("vast", "m41009-1x", "on_demand")]
    )
    assert (
        "spot price 2.6/h is not below the on-demand price 1.95/h"
        in suspect[("vast", "m41010-1x", "spot")]
    )
    # the plausible rows of the same providers landed, unmarked
    assert sum(1 for r in live if not r["suspect"]) >= 20
    assert {"vast", "lambda", "runpod", "aws", "azure", "vultr"} <= {
        r["key"][0] for r in live if not r["suspect"]
    }


def test_suspects_are_counted_per_provider_in_runs_and_the_api(db: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings

    assert latest_run(db, "lambda").offers_suspect == 1
    assert latest_run(db, "vast").offers_suspect == 2
    assert latest_run(db, "runpod").offers_suspect == 0
    with TestClient(create_app(Settings(database_url=db))) as client:
        runs = {r["provider"]: r for r in client.get("/v1/refresh-runs").json()}
        assert runs["vast"]["offers_suspect"] == 2 and runs["lambda"]["offers_suspect"] == 1


def test_suspects_stay_out_of_rank_unless_asked_and_are_marked(db: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings

    body: dict[str, Any] = {
        "workload": {"preset": "resnet50-imagenet"},
        "sort": "price_per_hour",
        "limit": 1000,
    }
    with TestClient(create_app(Settings(database_url=db))) as client:
        r = client.post("/v1/rank", json=body)
        assert r.status_code == 200, r.text[:500]
        listed = [x["offer"] for x in r.json()["results"]]
        assert not any(o["suspect"] for o in listed)
        assert not any((o["provider"], o["offer_key"], o["billing"]) in IMPLAUSIBLE for o in listed)

        body["filters"] = {"include_suspect": True}
        shown = client.post("/v1/rank", json=body).json()["results"]
        top = shown[0]["offer"]
        # the $0.01/h 8×H100 is the cheapest row when shown, and it is marked
        assert (top["provider"], top["offer_key"]) == ("lambda", "gpu_8x_h100_sxm5")
        assert top["suspect"] and "per GPU-hour" in top["suspect_reason"]

        page = client.get("/v1/offers", params={"provider": "vast", "limit": 1000}).json()
        assert not any(o["suspect"] for o in page["items"])
        page = client.get(
            "/v1/offers", params={"provider": "vast", "limit": 1000, "include_suspect": True}
        ).json()
        assert sum(o["suspect"] for o in page["items"]) == 2


def test_every_offer_has_a_price_age_and_seed_offers_seen_long_ago_are_old(db: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.price_age import tier
    from app.settings import Settings

    with TestClient(create_app(Settings(database_url=db))) as client:
        items = client.get("/v1/offers", params={"limit": 1000, "available_only": False}).json()[
            "items"
        ]
    now = dt.datetime.now(dt.UTC)
    assert items and all("age_days" in o and "price_age" in o for o in items)
    for o in items:
        if o["price_seen_at"] is None:  # the source gives no date: age unknown, never fresh
            assert o["age_days"] is None and o["price_age"] == "undated" and o["stale"]
            continue
        seen = dt.datetime.fromisoformat(o["price_seen_at"])
        assert o["age_days"] == pytest.approx((now - seen).total_seconds() / 86400, abs=0.01)
        assert o["price_age"] == tier(o["price_kind"], o["age_days"])
        assert o["stale"] == (o["price_age"] in ("old", "undated") or o["provider_refresh_stale"])
    vultr_2025 = [o for o in items if o["provider"] == "vultr" and o["source"].startswith("http")]
    # Vultr's seed rows were seen on 2025-01-08 (seed_data/offers_public.csv): old for a
    # hand-kept price (older than 90 days)
    assert vultr_2025 and all(
        o["price_seen_at"].startswith("2025-01-08") and o["price_age"] == "old" for o in vultr_2025
    )
    # the refresh at T0 (2026-11-20) is more than 7 days before the test's now: old for a
    # scraped price (a nightly refresh; older than 7 days)
    assert now - T0 > dt.timedelta(days=7)
    lam = [o for o in items if o["provider"] == "lambda" and o["source"].startswith("live: ")]
    assert lam and all(
        o["price_seen_at"] == T0.isoformat()
        and (o["price_kind"], o["price_age"], o["bookable"]) == ("scraped", "old", True)
        for o in lam
    )


def test_price_per_gpu_hour_is_next_to_the_price(db: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings(database_url=db))) as client:
        items = client.get(
            "/v1/offers", params={"provider": "vast", "gpu_count": 8, "limit": 1000}
        ).json()["items"]
    h100 = next(o for o in items if o["offer_key"] == "m52001-8x" and o["billing"] == "on_demand")
    assert h100["price_per_hour"] == 15.2 and h100["price_per_gpu_hour"] == 1.9


def test_every_seeded_offer_is_estimable_or_listed_with_its_reason(client: Any) -> None:
    every = client.get(
        "/v1/offers", params={"limit": 1000, "available_only": False, "include_suspect": True}
    ).json()
    assert every["total"] == len(every["items"]) > 100
    body = {
        "workload": {"preset": "resnet50-imagenet"},
        "filters": {"available_only": False, "include_suspect": True},
        "limit": 1000,
    }
    r = client.post("/v1/rank", json=body)
    assert r.status_code == 200, r.text[:500]
    answer = r.json()
    ranked = {x["offer"]["id"] for x in answer["results"]}
    listed = {x["offer"]["id"]: x["reason"] for x in answer["unestimable"]}
    assert ranked | set(listed) == {o["id"] for o in every["items"]}
    assert not ranked & set(listed)
    assert answer["unestimated_offers"] == len(listed)
    for x in answer["unestimable"]:
        assert x["offer"]["gpu"] is None
        assert (
            x["reason"].startswith(f"GPU {x['offer']['gpu_name_raw']!r} matches no catalog")
            or "ambiguous" in x["reason"]
        )


def test_every_offer_links_to_its_provider(client: Any) -> None:
    items = client.get("/v1/offers", params={"limit": 1000, "provider": "lambda"}).json()["items"]
    # seed_data/providers.csv: lambda's home page
    assert items and all(o["offer_url"] == "https://lambda.ai" for o in items)
