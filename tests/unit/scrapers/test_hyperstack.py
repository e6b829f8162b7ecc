"""Hyperstack: pricebook per GPU-hour x GPUs, stock, unpriced GPUs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import hyperstack
from scrapers.http import ScraperError
from tests.unit.scrapers.helpers import fetch, load


def test_flavors_priced_from_the_pricebook() -> None:
    result = hyperstack.parse_offers(
        load("hyperstack/flavors.json"), load("hyperstack/pricebook.json"), source="x"
    )
    by_key = {o.offer_key: o for o in result.offers}
    assert set(by_key) == {
        "n3-A100x1",
        "n3-A100x8",
        "n3-H100-SXM5x8",
        "n3-RTX-A6000x1",
        "n3-RTX-A6000x2",
    }
    a100x8 = by_key["n3-A100x8"]
    assert a100x8.price_per_hour == Decimal("10") and not a100x8.available  # 8 x 1.25, no stock
    assert by_key["n3-A100x1"].disk_gb == 850 and by_key["n3-A100x1"].vram_gib_per_gpu == 80
    assert by_key["n3-H100-SXM5x8"].interconnect == "nvswitch"
    assert result.warnings == [
        "hyperstack H200-141G-SXM5: listed in flavors but not in the pricebook; skipped"
    ]


def test_fetch_sends_the_key() -> None:
    assert len(fetch(hyperstack.SCRAPER).offers) == 5
    with pytest.raises(ScraperError, match="HTTP 401"):
        fetch(hyperstack.SCRAPER, hyperstack_api_key="wrong")
