"""Provider-supplied text is escaped everywhere; stale providers and price history show."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import select

from app.asgi import create_app
from app.db.models import GpuModel, InstanceOffer, PriceObservation, Provider, RefreshRun
from app.db.session import create_engine_from_url, create_session_factory
from app.settings import Settings
from tests.conftest import seeded_database
from tests.html_tree import parse

pytestmark = pytest.mark.db

EVIL = "<script>alert('x')</script>"
NOW = dt.datetime.now(dt.UTC)


@pytest.fixture(scope="module")
def hostile(fresh_db_module: str) -> Iterator[tuple[Any, int]]:
    """Seeded database plus a provider whose every text field is markup, refreshed and failed
    three days ago, with three price observations; and a healthy refreshed provider."""
    engine = create_engine_from_url(fresh_db_module)
    with create_session_factory(engine)() as s, s.begin():
        gpu_id = s.scalar(select(GpuModel.id).where(GpuModel.canonical_name == "H100 SXM 80GB"))
        evil = Provider(
            slug="evil",
            name=f"Evil {EVIL} Cloud",
            kind="cloud",
            source=f"javascript:alert(1) {EVIL}",
        )
        s.add(evil)
        s.flush()
        offer = InstanceOffer(
            provider_id=evil.id,
            offer_key=f"k{EVIL}",
            instance_type=f'"><img src=x onerror=alert(1)>{EVIL}',
            region=f"华北 {EVIL}",
            gpu_model_id=gpu_id,
            gpu_name_raw=f"H100 {EVIL}",
            gpu_count=8,
            vram_gib_per_gpu=80,
            vcpus=100,
            cpu_model=EVIL,
            ram_gib=1000,
            system_disk_gb=100,
            data_disk_gb=1000,
            max_cuda=f"12.4{EVIL}"[:16],
            driver_version=EVIL[:32],
            interconnect="nvswitch",
            billing="on_demand",
            price_per_hour=Decimal("20"),
            currency="USD",
            available=True,
            first_seen_at=NOW - dt.timedelta(days=20),
            last_seen_at=NOW - dt.timedelta(days=3),
            source=f"javascript:alert(1) https://example.com/a?b=<c> {EVIL}",
            notes=f"<b>bold</b> {EVIL}",
        )
        s.add(offer)
        s.flush()
        for days, price in ((20, "24"), (10, "22"), (3, "20")):
            s.add(
                PriceObservation(
                    offer_id=offer.id,
                    observed_at=NOW - dt.timedelta(days=days),
                    price_per_hour=Decimal(price),
                    currency="USD",
                    source=f"scrape {EVIL}",
                )
            )
        s.add(
            RefreshRun(
                provider_id=evil.id,
                started_at=NOW - dt.timedelta(days=3, hours=1),
                finished_at=NOW - dt.timedelta(days=3),
                status="ok",
                offers_seen=1,
            )
        )
        s.add(
            RefreshRun(
                provider_id=evil.id,
                started_at=NOW - dt.timedelta(hours=2),
                finished_at=NOW - dt.timedelta(hours=1),
                status="error",
                error=f"HTTP 500 {EVIL}",
            )
        )
        lam = s.scalar(select(Provider.id).where(Provider.slug == "lambda"))
        s.add(
            RefreshRun(
                provider_id=lam,
                started_at=NOW - dt.timedelta(hours=1),
                finished_at=NOW - dt.timedelta(minutes=50),
                status="ok",
            )
        )
        offer_id = offer.id
    engine.dispose()
    with TestClient(create_app(Settings(database_url=fresh_db_module))) as client:
        yield client, offer_id


@pytest.fixture(scope="module")
def fresh_db_module() -> Iterator[str]:
    with seeded_database() as url:
        yield url


def assert_escaped(html: str) -> None:
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript:' not in html


def test_provider_text_is_escaped_on_every_page(hostile: tuple[Any, int]) -> None:
    client, offer_id = hostile
    pages = [
        "/?preset=llama3-8b-full&provider=evil",
        "/?preset=llama3-8b-full&order=provider",
        f"/offers/{offer_id}?preset=llama3-8b-full",
        f"/offers/{offer_id}",
        "/gpus",
        "/gpus/H100%20SXM%2080GB",
        "/gpus?sort=offers&order=desc",
    ]
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200, (path, r.text[:500])
        assert_escaped(r.text)
    gpu_page = parse(client.get("/gpus/H100%20SXM%2080GB").text)
    row = gpu_page.find("table", id="offers-table").find("tr", **{"data-offer-id": str(offer_id)})
    assert EVIL in row.text  # the provider's offer is listed, its texts shown as text
    doc = parse(client.get(f"/offers/{offer_id}").text)
    assert EVIL in doc.find("h1").text  # shown as text, not run
    links = [a.attrs["href"] for a in doc.find("dd", cls="source").find_all("a")]
    assert links == ["https://example.com/a?b="]


def test_chart_titles_escape_offer_names(hostile: tuple[Any, int]) -> None:
    client, offer_id = hostile
    doc = parse(client.get("/?preset=llama3-8b-full&provider=evil").text)
    (point,) = doc.find("svg", cls="scatter").find_all("circle", cls="pt")
    assert EVIL in point.find("title").text
    assert point.attrs["data-offer-id"] == str(offer_id)


def test_banner_warns_about_stale_providers(hostile: tuple[Any, int]) -> None:
    client, _ = hostile
    doc = parse(client.get("/gpus").text)
    banner = doc.find("section", cls="banner")
    assert "warn" in banner.classes
    stale = banner.find("p", cls="stale")
    assert "Evil" in stale.text and "last refresh failed" in stale.text
    rows = {tr.find("td").text: tr for tr in banner.find("table").find("tbody").find_all("tr")}
    evil = next(tr for name, tr in rows.items() if name.startswith("Evil"))
    assert "stale" in evil.text and "last run failed" in evil.text and "HTTP 500" in evil.text
    assert "refreshed " + (NOW - dt.timedelta(days=3)).strftime("%Y-%m-%d") in evil.text
    assert "refreshed" in rows["Lambda"].text and "last run succeeded" in rows["Lambda"].text
    assert "2 refreshed" in banner.find("summary").text
    assert "seed data" in rows["Amazon Web Services"].text
    ranked = parse(client.get("/?preset=llama3-8b-full&provider=evil").text)
    assert ranked.find("table", id="results-table").find("span", cls="stale")


def test_price_history_chart_and_json_twin(hostile: tuple[Any, int]) -> None:
    client, offer_id = hostile
    data = client.get(f"/v1/offers/{offer_id}").json()
    assert [p["price_per_hour"] for p in data["price_history"]] == [24.0, 22.0, 20.0]
    doc = parse(client.get(f"/offers/{offer_id}").text)
    chart = doc.find("section", id="prices").find("svg", cls="timeline")
    assert len(chart.find_all("circle", cls="pt")) == 3
    assert chart.find("polyline", cls="price-line")
    rows = doc.find("table", cls="history").find("tbody").find_all("tr")
    assert [tr.find_all("td")[1].text for tr in rows] == ["$20.00", "$22.00", "$24.00"]
