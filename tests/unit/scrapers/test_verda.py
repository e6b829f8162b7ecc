"""Verda: OAuth token, total GPU memory per instance, offers where available now."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import verda
from scrapers.http import ScraperError
from tests.unit.scrapers.helpers import fetch, load


def test_types_by_availability() -> None:
    result = verda.parse_offers(
        load("verda/instance-types.json"),
        load("verda/availability.json"),
        load("verda/availability_spot.json"),
        source="x",
    )
    by_key = {(o.offer_key, o.region, o.billing): o for o in result.offers}
    assert set(by_key) == {
        ("1H100.80S.30V", "FIN-01", "on_demand"),
        ("1H100.80S.30V", "ICE-01", "on_demand"),
        ("8H100.80S.176V", "FIN-01", "on_demand"),
        ("2A6000.20V", "FIN-01", "on_demand"),
        ("1V100.6V", "ICE-01", "on_demand"),
        ("1H100.80S.30V", "FIN-01", "spot"),
        ("1V100.6V", "FIN-01", "spot"),
    }  # the CPU node is no GPU offer
    h100x8 = by_key[("8H100.80S.176V", "FIN-01", "on_demand")]
    assert h100x8.vram_gib_per_gpu == 80  # 640 GB is the instance's total
    assert h100x8.price_per_hour == Decimal("17.52") and h100x8.interconnect == "nvswitch"
    assert h100x8.gpu_name_raw == "H100 SXM5 80GB"
    assert by_key[("1V100.6V", "FIN-01", "spot")].price_per_hour == Decimal("0.14")
    assert by_key[("1V100.6V", "ICE-01", "on_demand")].disk_gb == 225


def test_fetch_authenticates_first() -> None:
    assert len(fetch(verda.SCRAPER).offers) == 7
    with pytest.raises(ScraperError, match="HTTP 401"):
        fetch(verda.SCRAPER, verda_api_key="wrong-secret")
    with pytest.raises(ScraperError, match="GPUCOST_SCRAPER_VERDA_CLIENT_ID"):
        fetch(verda.SCRAPER, verda_client_id="")
