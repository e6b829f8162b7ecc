"""TensorDock: one stated composition per GPU count, priced from the per-unit rates."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import tensordock
from scrapers.http import ScraperError
from tests.unit.scrapers.helpers import fetch, load


def test_compositions_and_prices() -> None:
    result = tensordock.parse_locations(load("tensordock/locations.json"), source="x")
    by_key = {(o.instance_type, o.region): o for o in result.offers}
    h100 = by_key[("1x h100-sxm5-80gb", "Austin, Texas, United States")]
    # 1/8 of 128 vCPUs and 1000 GB: 16 vCPUs, 120 GB (steps of 2 and 8), 100 GB disk
    assert (h100.vcpus, h100.ram_gib, h100.disk_gb) == (16, 120, 100)
    assert h100.price_per_hour == Decimal("2.493")  # 2.2 + 16 x .003 + 120 x .002 + 100 x .00005
    x4 = by_key[("4x geforcertx4090-pcie-24gb", "Austin, Texas, United States")]
    assert x4.price_per_hour == Decimal("1.757") and x4.vram_gib_per_gpu == 24
    assert by_key[("8x h100-sxm5-80gb", "Austin, Texas, United States")].interconnect == "nvswitch"
    assert ("4x rtxa6000-pcie-48gb", "Helsinki, Uusimaa, Finland") not in by_key  # max_count 2
    assert len(result.offers) == 9 and result.skipped == 1  # the entry without max_count


def test_fetch_sends_the_key() -> None:
    assert len(fetch(tensordock.SCRAPER).offers) == 9
    with pytest.raises(ScraperError, match="HTTP 401"):
        fetch(tensordock.SCRAPER, tensordock_api_key="wrong")
